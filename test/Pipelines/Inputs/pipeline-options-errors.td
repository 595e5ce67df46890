// Inputs of pipeline-options-tblgen.test: each -D a mistake ddp-tblgen
// refuses.
include "ddp/Pipelines/PipelineBase.td"

def A : Pass<"a"> {
  let options = [Option<"x", "x", "int64_t", "0", "x of a">];
}
def B : Pass<"b"> {
  let options = [Option<"otherX", "x", "int64_t", "1", "x of b">];
}

#ifdef DIFFERENT_DEFAULT
def P : PipelineOptions { let passes = [A, B]; }
#endif
#ifdef TWICE
def P : PipelineOptions {
  let passes = [A];
  let options = [Option<"y", "x", "bool", "false", "x of the pipeline">];
}
#endif
#ifdef NO_SUCH_OPTION
def P : PipelineOptions {
  let passes = [A];
  let aliases = [OptionAlias<"z", "z", "y", "z for y">];
}
#endif
#ifdef NEGATED_INT
def P : PipelineOptions {
  let passes = [A];
  let aliases = [OptionAlias<"z", "z", "x", "z off", /*negated=*/1>];
}
#endif
#ifdef NO_SUCH_DEFAULT
def P : PipelineOptions {
  let passes = [A];
  let defaults = [PipelineDefault<"y", "1">];
}
#endif
#ifdef DIFFERENT_FLAGS
def C : Pass<"c"> {
  let options = [Option<"x", "x", "int64_t", "0", "x of c",
                        "llvm::cl::Hidden">];
}
def P : PipelineOptions { let passes = [A, C]; }
#endif
