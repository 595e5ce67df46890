// RUN: ddp-opt %s --ddp-schedule -split-input-file -verify-diagnostics

// A recorded option ddp-schedule does not have.
// expected-error@+1 {{'ddp.schedule_options' records 'overlap-everything', which is not a ddp-schedule option}}
module attributes {ddp.schedule_options = {"overlap-everything" = true}} {
}

// -----

// A value the option's parser rejects.
// expected-error@+1 {{'ddp.schedule_options' records a malformed value for 'bucket-size': "forty"}}
module attributes {ddp.schedule_options = {"bucket-size" = "forty"}} {
}

// -----

// An integer past int64 is rejected, not truncated (here to -5).
// expected-error@+1 {{'ddp.schedule_options' records a malformed value for 'bucket-size': 18446744073709551611 : ui64}}
module attributes {ddp.schedule_options = {"bucket-size" = 18446744073709551611 : ui64}} {
}

// -----

// A string is one value, space and all: hw is the whole of it (which is
// no profile), not h100-sxm-ib400 and a second option policy=pytorch.
// expected-error@+1 {{'ddp.schedule_options' records options that ddp-schedule rejects: hw=h100-sxm-ib400 policy=pytorch: unknown hardware profile 'h100-sxm-ib400 policy=pytorch'}}
module attributes {ddp.schedule_options = {"hw" = "h100-sxm-ib400 policy=pytorch", "policy" = "auto"}} {
  ddp.mesh @world(dp = 2)
  ddp.param @w : tensor<8xf32>
  func.func @step(%g: tensor<8xf32>) {
    %r = ddp.grad_ready @w, %g : tensor<8xf32>
    %a = ddp.all_reduce avg %r over @world[dp] : tensor<8xf32>
    ddp.sgd @w, %a lr 0.5 : tensor<8xf32>
    return
  }
}

// -----

// The option parser has no escapes: a value with both kinds of quotes, or
// with white space it would trim, cannot be passed to it as it is.
// expected-error@+1 {{'ddp.schedule_options' records a value for 'hw' that ddp-schedule's option parser cannot read as one value: "'a\22b"; it must not contain both kinds of quotes nor begin or end with white space}}
module attributes {ddp.schedule_options = {"hw" = "'a\"b"}} {
}

// -----

// expected-error@+1 {{'ddp.schedule_options' records a value for 'hw' that ddp-schedule's option parser cannot read as one value: "h100-sxm-ib400 "}}
module attributes {ddp.schedule_options = {"hw" = "h100-sxm-ib400 "}} {
}

// -----

// Values each option's parser takes but the passes reject before reading
// any IR: reported at the module, not without a location as for the same
// options on the command line.
// expected-error@+1 {{'ddp.schedule_options' records options that ddp-schedule rejects: bucket-size must not be negative, got -5}}
module attributes {ddp.schedule_options = {"bucket-size" = -5}} {
}

// -----

// expected-error@+1 {{'ddp.schedule_options' records options that ddp-schedule rejects: num-distributed-optimizer-instances=2 needs use-distributed-optimizer=true}}
module attributes {ddp.schedule_options = {"num-distributed-optimizer-instances" = 2}} {
}

// -----

// expected-error@+1 {{'ddp.schedule_options' records options that ddp-schedule rejects: the size policy needs exactly one of bucket-size (elements) and bucket-bytes}}
module attributes {ddp.schedule_options = {"policy" = "size"}} {
}

// -----

// Rejected by the option's parser, with or without tp-comm-overlap.
// expected-error@+1 {{'ddp.schedule_options' records a malformed value for 'tp-comm-num-splits': "0"}}
module attributes {ddp.schedule_options = {"tp-comm-overlap" = true, "tp-comm-num-splits" = "0"}} {
}

// -----

// Megatron-LM rejects these three too; the passes used to find them only
// while they ran, at an op of the step.
// expected-error@+1 {{'ddp.schedule_options' records options that ddp-schedule rejects: bucket-size and num-buckets are exclusive}}
module attributes {ddp.schedule_options = {"bucket-size" = 100, "num-buckets" = 4}} {
}

// -----

// expected-error@+1 {{'ddp.schedule_options' records options that ddp-schedule rejects: num-distributed-optimizer-instances must be at least 1, got 0}}
module attributes {ddp.schedule_options = {"use-distributed-optimizer" = true, "num-distributed-optimizer-instances" = 0}} {
}

// -----

// expected-error@+1 {{'ddp.schedule_options' records options that ddp-schedule rejects: overlap-param-gather=true needs use-distributed-optimizer=true}}
module attributes {ddp.schedule_options = {"overlap-param-gather" = true}} {
}

// -----

// A value of a kind no option has.
// expected-error@+1 {{'ddp.schedule_options' records 'bucket-size' as 4.000000e+01 : f64; expected a bool, an integer or a string}}
module attributes {ddp.schedule_options = {"bucket-size" = 40.0}} {
}

// -----

// Not a dictionary.
// expected-error@+1 {{'ddp.schedule_options' must be a dictionary from ddp-schedule option names to values, got ["overlap-grad-reduce"]}}
module attributes {ddp.schedule_options = ["overlap-grad-reduce"]} {
}
