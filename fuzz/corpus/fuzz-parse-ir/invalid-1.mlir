func.func @f() {
  // expected-error @+1 {{'ddp.mesh' op expects parent op 'builtin.module'}}
  ddp.mesh @world(dp = 2)
  return
}
