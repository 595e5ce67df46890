// RUN: ddp-opt %s -split-input-file --convert-to-llvm -verify-diagnostics

// Under -convert-to-llvm the program's first op plans the module, with the
// errors of ddp-lower-to-runtime; the mesh then stays illegal.

// expected-error @below {{failed to legalize operation 'ddp.mesh' that was explicitly marked illegal}}
ddp.mesh @world(dp = 2)
func.func @step(%x: tensor<4xf32>) {
  return
}
// expected-error @below {{cannot lower a module with more than one function; the step is @step}}
func.func @other() {
  return
}

// -----

// The patterns are made before the conversion sees the module, so the plan
// is made when the driver reaches the program: a declaration before it has
// been converted by then.

// expected-note @below {{converted to llvm.func}}
func.func private @host_clock() -> i64
// expected-error @below {{cannot plan the program after the conversion changed the module: under -convert-to-llvm, the mesh, parameters and step come before the ops it converts (or use -ddp-lower-to-runtime)}}
// expected-error @below {{failed to legalize operation 'ddp.mesh' that was explicitly marked illegal}}
ddp.mesh @world(dp = 2)
func.func @step(%x: tensor<4xf32>) {
  %c = func.call @host_clock() : () -> i64
  return
}
