// A dense array of `index` elements crashes MLIR 22's attribute parser
// (Parser::parseDenseArrayAttr asks `index` for a float width) before any ddp
// code runs: mlir-opt crashes on it too, in any attribute of any op. The
// dialect cannot intercept it, since the generic form parses properties as a
// plain attribute dictionary. This test keeps the reproducer (found by
// fuzzing, docs/Fuzzing.md); it passes, and must lose its XFAIL, once the
// parser reports an error instead.
// XFAIL: *
// RUN: ddp-opt %s -verify-diagnostics

func.func @f() {
  // expected-error @+1 {{}}
  %b = "ddp.bucket_pack"() <{offsets = array<index>}> : () -> tensor<4xf32>
  return
}
