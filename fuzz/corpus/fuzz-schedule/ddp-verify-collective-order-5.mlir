Âddp.mesh @world(dp = 2)
func.func @rank_dependent(%g: tensor<8xf32>, %rank_is_zero: i1) {
  // expected-note @+1 {{the enclosing op}}
  "test.if"(%rank_is_zero) ({
    // expected-error @+1 {{this collective is issued inside 'test.if', so whether it runs may depend on the rank; every rank of a group must issue the group's collectives in the same order}}
    %r = ddp.all_reduce sum %g over @world[dp] : tensor<8xf32>
    "test.yield"() : () -> ()
  }, {
    "test.yield"() : () -> ()
  }) : (i1) -> ()
  return
}
