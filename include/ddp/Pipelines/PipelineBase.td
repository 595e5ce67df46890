//===- PipelineBase.td - A pass pipeline's options -------*- tablegen -*-===//
//
// The records ddp-tblgen -gen-pipeline-options reads: a pass pipeline's
// options struct made of its passes' options (docs/Extending.md, "A
// pipeline option").
//
//===----------------------------------------------------------------------===//

#ifndef DDP_PIPELINES_PIPELINEBASE_TD
#define DDP_PIPELINES_PIPELINEBASE_TD

include "mlir/Pass/PassBase.td"

// A second name for a pipeline option (a Megatron flag), its own option
// merged into it: the option wins when it is given, else the alias's value
// counts. A negated alias of a bool option turns it off when true.
class OptionAlias<string varName, string arg, string of, string desc,
                  bit neg = 0> {
  string cppName = varName;
  string argument = arg;
  string aliasOf = of;
  string description = desc;
  bit negated = neg;
}

// A pipeline's default for a pass option that differs from the pass's.
class PipelineDefault<string arg, string value> {
  string argument = arg;
  string defaultValue = value;
}

// The options struct of a pass pipeline, named after the def: every option
// of `passes` (one member per argument; passes sharing one must agree on
// its type and default; the first declaration's description is the help),
// its own `options`, and `aliases`. get<Pass>PassOptions gives each pass
// its options from the struct.
class PipelineOptions {
  list<Pass> passes = [];
  list<PipelineDefault> defaults = [];
  list<Option> options = [];
  list<OptionAlias> aliases = [];
}

#endif // DDP_PIPELINES_PIPELINEBASE_TD
