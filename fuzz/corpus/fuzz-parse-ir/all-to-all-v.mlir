ddp.mesh @world(ep = 3)
func.func @step(%x: tensor<12x4xbf16>, %rows: tensor<24xf32>) {
  %send = ddp.compute "moe_count"(%rows) routing count params [4] flops 0.0 bytes 1.0 : (tensor<24xf32>) -> tensor<6xf32>
  %recv = ddp.all_to_all %send over @world[ep] : tensor<6xf32>
  %a = ddp.all_to_all_v %x counts %send, %recv over @world[ep] : tensor<12x4xbf16>, tensor<6xf32>
  %b, %t = ddp.all_to_all_v %a counts %recv, %send over @world[ep] async : tensor<12x4xbf16>, tensor<6xf32>
  ddp.wait %t
  return
}
