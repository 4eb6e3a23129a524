// Random inputs come from --seed (same seed, same numbers); --outputs writes an
// npz keyed by output name, which --inputs reads back by input name (ge.name, else
// argN). The outputs here equal the inputs and carry their names, so a run fed
// with the outputs of another reproduces it exactly.
// RUN: ge-sim %s --seed 7 --outputs %t.seed7.npz > %t.seed7.txt
// RUN: ge-sim %s --seed 7 --outputs %t.again7.npz > %t.again7.txt
// RUN: ge-sim %s --seed 8 > %t.seed8.txt
// RUN: ge-sim %s --inputs %t.seed7.npz --outputs %t.fed.npz > %t.fed.txt
// RUN: filecheck %s --input-file %t.seed7.txt
// RUN: diff %t.seed7.txt %t.again7.txt
// RUN: diff %t.seed7.txt %t.fed.txt
// RUN: not diff %t.seed7.txt %t.seed8.txt
// RUN: python -c "import sys, numpy as np; a, b, c = (np.load(p) for p in sys.argv[1:]); [print(k, a[k].dtype, a[k].shape, np.array_equal(a[k], b[k]), np.array_equal(a[k], c[k])) for k in sorted(a.files)]" %t.seed7.npz %t.again7.npz %t.fed.npz | filecheck %s --check-prefix=NPZ

func.func @main(%x: tensor<3x4xf16> {ge.name = "x"}, %n: tensor<5xi32>) -> (tensor<3x4xf16> {ge.name = "x"}, tensor<5xi32> {ge.name = "arg1"}) {
  %a = ge.neg %x : (tensor<3x4xf16>) -> tensor<3x4xf16>
  %b = ge.neg %a : (tensor<3x4xf16>) -> tensor<3x4xf16>
  %i = ge.abs %n : (tensor<5xi32>) -> tensor<5xi32>
  func.return %b, %i : tensor<3x4xf16>, tensor<5xi32>
}

// CHECK:      {{^}}x: tensor<3x4xf16> min={{-?[0-9.e+-]+}} max={{-?[0-9.e+-]+}} mean={{-?[0-9.e+-]+}}{{$}}
// CHECK-NEXT: {{^}}arg1: tensor<5xi32> min={{[0-9]}} max={{[0-9]}} mean={{[0-9.]+}}{{$}}
// CHECK-NOT:  {{.}}

// NPZ:      {{^}}arg1 int32 (5,) True True{{$}}
// NPZ-NEXT: {{^}}x float16 (3, 4) True True{{$}}
// NPZ-NOT:  {{.}}
