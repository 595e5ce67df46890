#!/usr/bin/env bash
# Byte-for-byte comparison of what two builds of ddp-opt produce, for a
# refactoring that must not change any output (issue 26): each preset (1
# layer, seq 16) x option set is scheduled, simulated, lowered and
# summarised by both, and every output and stderr compared.
#
#   utils/compare-outputs.sh OLD_BIN_DIR NEW_BIN_DIR [WORK_DIR]
#
# OLD_BIN_DIR: the bin/ of a build of the commit before the change (e.g. a
# git worktree built with `ninja ddp-opt ddp-import`). Exits 1 when an
# output differs, naming it.
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 OLD_BIN_DIR NEW_BIN_DIR [WORK_DIR]" >&2; exit 2; }
work=${3:-$(mktemp -d)}
mkdir -p "$work/old" "$work/new" "$work/input"
# Absolute: each side runs in its own folder.
old=$(cd "$1" && pwd) new=$(cd "$2" && pwd) work=$(cd "$work" && pwd)

presets=(tiny tiny-moe gpt-8.3b llama2-7b mixtral-8x7b)
option_sets=(
  "policy=megatron"
  "policy=pytorch"
  "policy=auto"
  "policy=megatron use-distributed-optimizer=true overlap-param-gather=true"
  "policy=auto use-distributed-optimizer=true num-distributed-optimizer-instances=2"
  "policy=megatron tp-comm-overlap=true"
  "policy=size bucket-bytes=1000000 grad-reduce-in-fp32=true check-for-nan-in-grad=true"
)

compared=0 differ=0
for preset in "${presets[@]}"; do
  input=$work/input/$preset.mlir
  "$new/ddp-import" --preset="$preset" --set num_layers=1 --set seq_length=16 >"$input"
  for index in "${!option_sets[@]}"; do
    options=${option_sets[$index]}
    name=$preset-$index
    for side in old new; do
      bin=$old; [[ $side == new ]] && bin=$new
      out=$work/$side/$name
      # Relative paths, so that messages naming a file read the same.
      (cd "$work/$side" &&
        { "$bin/ddp-opt" "$input" --ddp-schedule="$options" -o "$name.mlir" &&
          "$bin/ddp-opt" "$name.mlir" -o /dev/null \
            --ddp-simulate="hw=h100-sxm-ib400 report=$name.json output=$name.txt" &&
          "$bin/ddp-opt" "$name.mlir" --ddp-lower-to-runtime -o "$name.lowered.mlir" &&
          "$bin/ddp-opt" "$name.mlir" --ddp-step-stats -o /dev/null >"$name.stats"
        } 2>"$name.err") || true
    done
    for file in "$work/old/$name".*; do
      compared=$((compared + 1))
      other=$work/new/${file#"$work/old/"}
      if ! cmp -s "$file" "$other"; then
        differ=$((differ + 1))
        echo "differs: ${file#"$work/old/"} ($preset, $options)"
      fi
    done
  done
done
echo "compare-outputs: $compared outputs compared, $differ differ (in $work)"
((differ == 0))
