// ge-sim's errors are one line with exit code 1: an inputs file without an array
// the module needs or with the wrong shape, a file that is not an npz archive,
// unreadable or unwritable paths, a bad flag.
// RUN: python -c "import sys, numpy as np; np.savez(sys.argv[1], y=np.zeros((2, 3), np.float32)); np.savez(sys.argv[2], x=np.zeros((3, 2), np.float32)); np.save(sys.argv[3], np.zeros(3))" %t.nokey.npz %t.shape.npz %t.array.npy
// RUN: not ge-sim %s --inputs %t.nokey.npz 2>&1 | filecheck %s --check-prefix=NOKEY
// RUN: not ge-sim %s --inputs %t.shape.npz 2>&1 | filecheck %s --check-prefix=SHAPE
// RUN: not ge-sim %s --inputs %t.array.npy 2>&1 | filecheck %s --check-prefix=NPY
// RUN: not ge-sim %s --inputs %s 2>&1 | filecheck %s --check-prefix=NOTNPZ
// RUN: not ge-sim %s --inputs %t.absent.npz 2>&1 | filecheck %s --check-prefix=ABSENT
// RUN: not ge-sim %s --outputs %t.absent/dir/out.npz 2> %t.unwritable.txt
// RUN: filecheck %s --check-prefix=UNWRITABLE --input-file %t.unwritable.txt
// RUN: not ge-sim %s --seed x 2>&1 | filecheck %s --check-prefix=FLAG

func.func @main(%x: tensor<2x3xf32> {ge.name = "x"}) -> tensor<2x3xf32> {
  %y = ge.tanh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// NOKEY-NOT: Traceback
// NOKEY:     {{^}}error: '{{.*}}.nokey.npz' has no array 'x' (it has: y){{$}}
// NOKEY-NOT: {{.}}

// SHAPE-NOT: Traceback
// SHAPE:     {{^}}error: input 'x' in '{{.*}}.shape.npz' has shape [3, 2], @main expects [2, 3]{{$}}
// SHAPE-NOT: {{.}}

// NPY-NOT: Traceback
// NPY:     {{^}}error: cannot read inputs from '{{.*}}.array.npy': not an npz archive (a single .npy array){{$}}
// NPY-NOT: {{.}}

// NOTNPZ-NOT: Traceback
// NOTNPZ:     {{^}}error: cannot read inputs from '{{.*}}ge-sim-errors.mlir': not an npz archive{{$}}
// NOTNPZ-NOT: {{.}}

// ABSENT-NOT: Traceback
// ABSENT:     {{^}}error: cannot read inputs from '{{.*}}.absent.npz': No such file or directory{{$}}
// ABSENT-NOT: {{.}}

// UNWRITABLE-NOT: Traceback
// UNWRITABLE:     {{^}}error: cannot write outputs to '{{.*}}.absent/dir/out.npz': No such file or directory{{$}}
// UNWRITABLE-NOT: {{.}}

// FLAG:     {{^}}error: argument --seed: invalid seed 'x': expected an integer 0 or more (see ge-sim --help){{$}}
// FLAG-NOT: {{.}}
