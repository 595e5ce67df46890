ddp.mesh @world(ep = 3)
func.func @step(%x: tensor<6x4xbf16>) {
  %a = ddp.all_to_all %x over @world[ep] : tensor<6x4xbf16>
  %b, %t = ddp.all_to_all %a over @world[ep] async : tensor<6x4xbf16>
  ddp.wait %t
  return
}
