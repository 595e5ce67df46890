func.func @f() {
  // expected-error @+1 {{'ddp.join' op needs at least one token}}
  %j = ddp.join
  return
}
