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

// A value of a kind no option has.
// expected-error@+1 {{'ddp.schedule_options' records 'bucket-size' as 4.000000e+01 : f64; expected a bool, an integer or a string}}
module attributes {ddp.schedule_options = {"bucket-size" = 40.0}} {
}

// -----

// Not a dictionary.
// expected-error@+1 {{'ddp.schedule_options' must be a dictionary from ddp-schedule option names to values, got ["overlap-grad-reduce"]}}
module attributes {ddp.schedule_options = ["overlap-grad-reduce"]} {
}
