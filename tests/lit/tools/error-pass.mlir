// Unknown passes, unknown pass options and malformed pipelines are one-line
// errors (there is no source location to give), exit code 1.
// RUN: not ge-opt %s --pass-pipeline 'builtin.module(cse,nosuch)' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not ge-opt %s -p 'cse{depth=2}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not ge-opt %s --pass-pipeline 'builtin.module(cse' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not ge-opt %s -p 'ge-compile{streams=x}' 2>&1 | filecheck %s --check-prefix=TYPE
// RUN: not ge-opt %s -p 'ge-compile{fuse=3}' 2>&1 | filecheck %s --check-prefix=BOOL

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}

// UNKNOWN-NOT: Traceback
// UNKNOWN:     {{^}}error: unknown pass 'nosuch' (see --list-passes){{$}}
// UNKNOWN-NOT: {{.}}

// OPTION-NOT: Traceback
// OPTION:     {{^}}error: pass 'cse' has no option 'depth' (options: none){{$}}
// OPTION-NOT: {{.}}

// SYNTAX-NOT: Traceback
// SYNTAX:     {{^}}error: invalid pass pipeline 'builtin.module(cse': {{.+}}{{$}}
// SYNTAX-NOT: {{.}}

// TYPE-NOT: Traceback
// TYPE:     {{^}}error: bad options for pass 'ge-compile': option 'streams' expects an integer, got 'x'{{$}}

// BOOL:     {{^}}error: bad options for pass 'ge-compile': option 'fuse' expects true or false, got '3'{{$}}
