// `ge-sim --exact` (the full simulation, every shortcut off) gives the same report
// and bitwise the same outputs as the default simulation, on the ascend910 preset
// (with its L2) and on tiny; and the same race error on a racy kernel.
// RUN: ge-sim %S/matmul_256.mlir --seed 2 --hw ascend910 --report --outputs %t.fast.npz > %t.fast
// RUN: ge-sim %S/matmul_256.mlir --seed 2 --hw ascend910 --report --outputs %t.full.npz --exact > %t.full
// RUN: diff %t.fast %t.full
// RUN: python -c "import numpy as n, sys; a, b = n.load(sys.argv[1]), n.load(sys.argv[2]); assert all(a[k].tobytes() == b[k].tobytes() for k in a.files)" %t.fast.npz %t.full.npz
// RUN: ge-sim %S/matmul_256.mlir --seed 2 --report --no-shortcuts | filecheck %s
// RUN: not ge-sim %S/error-race.mlir 2> %t.race.fast
// RUN: not ge-sim %S/error-race.mlir --exact 2> %t.race.full
// RUN: diff %t.race.fast %t.race.full
// CHECK: total: {{[0-9]+}} cycles
