	// Ops of an unknown dialect with two regions stand for control flow (with a
// single region they could be symbol tables, hiding the mesh).

// Tokens waited (directly or through a join) before their results are
// read, collectives at the top level: the IR passes unchanged.
ddp.mesh @world(dp = 2, tp = 2)
func.func @scheduled(%g: tensor<8xf32>, %h: tensor<8xf32>) -> tensor<8xf32> {
  %r, %t = ddp.all_reduce sum %g over @world[dp] async : tensor<8xf32>
  %s, %u = ddp.all_reduce sum %h over @world[tp] async : tensor<8xf32>
  %x = ddp.all_gather %g over @world[dp] : tensor<8xf32> -> tensor<16xf32>
  %j = ddp.join %t, %u
  ddp.wait %j
  %y = ddp.compute "add"(%r, %s) flops 8.0 bytes 96.0 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// A function that issues collectives, called unconditionally.
func.func private @reduce(%g: tensor<8xf32>) -> tensor<8xf32> {
  %r = ddp.all_reduce sum %g over @world[dp] : tensor<8xf32>
  return %r : tensor<8xf32>
}
func.func @caller(%g: tensor<8xf32>) -> tensor<8xf32> {
  %r = func.call @reduce(%g) : (tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}
