Mddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
// expected-error @+1 {{'ddp.buckets' must be an array of bucket dictionaries}}
func.func @not_an_array(%g: tensor<4xf32>) attributes {ddp.buckets = 3} {
  return
}
