"""Symbol lookup in time independent of the module's size.

xDSL's `SymbolTable.lookup_symbol` scans the symbol table's ops for the name at
every call. A model's module holds hundreds of kernels, and the host plan's
passes look up the kernel of every launch, several times each: DenseNet-121's
compile made 3,154 lookups over ~400 kernels (6% of its compile). `lookup_symbol`
keeps a name -> op table per symbol table op, built in one scan and checked at
every hit (the op found is still in the table under that name), so an op erased,
moved or renamed since is found again by a fresh scan, never returned stale.
"""

from __future__ import annotations

import weakref

from xdsl.dialects.builtin import StringAttr, SymbolRefAttr
from xdsl.ir import Operation
from xdsl.traits import SymbolOpInterface, SymbolTable

_TABLES: weakref.WeakKeyDictionary[Operation, dict[str, Operation]] = weakref.WeakKeyDictionary()


def lookup_symbol(op: Operation, name: str | StringAttr | SymbolRefAttr) -> Operation | None:
    """`SymbolTable.lookup_symbol(op, name)`: the op of that symbol in the symbol
    table nearest `op` (None if there is none)."""
    if isinstance(name, str | StringAttr):
        name = SymbolRefAttr(name)
    if name.nested_references.data:
        return SymbolTable.lookup_symbol(op, name)
    table = op
    while table is not None and not table.has_trait(SymbolTable):
        table = table.parent_op()
    if table is None:
        raise ValueError(f"Operation {op} has no SymbolTable ancestor")
    key = name.root_reference.data
    symbols = _TABLES.get(table)
    found = symbols.get(key) if symbols is not None else None
    if found is None or found.parent_op() is not table or _symbol(found) != key:
        symbols = _TABLES[table] = _scan(table)
        found = symbols.get(key)
    return found


def _scan(table: Operation) -> dict[str, Operation]:
    """Name -> op of the table's symbols, the first of a name (as xDSL's scan finds)."""
    symbols: dict[str, Operation] = {}
    for o in table.regions[0].block.ops:
        name = _symbol(o)
        if name is not None:
            symbols.setdefault(name, o)
    return symbols


def _symbol(op: Operation) -> str | None:
    interface = op.get_trait(SymbolOpInterface)
    if interface is None:
        return None
    name = interface.get_sym_attr_name(op)
    return name.data if name is not None else None
