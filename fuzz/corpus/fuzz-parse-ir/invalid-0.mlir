// expected-error @+1 {{'ddp.mesh' op needs at least one axis}}
ddp.mesh @world()
