#!/usr/bin/env bash
# Interleaved plain vs speculative decode on the demo model: per round every workload runs once per mode
# (alternating), and the per-round ratio spec/plain of decode tok/s is reported with its median.
set -euo pipefail
E=${EMBER:-build/ember}
M=${MODEL:?set MODEL to the demo model (scripts/make-demo-model)}
N=${N:-96}
ROUNDS=${ROUNDS:-3}
MODES=${MODES:-"off ngram"}
EXTRA=${EXTRA:-}
P1="The quick brown fox jumps over the lazy dog. Once upon a time there was a little girl who lived in a village near the forest."
declare -A W
W[loop_greedy]="--temp 0"
W[sampled]="--temp 0.8 --seed 7"
W[greedy_penalty]="--temp 0 --repeat-penalty 1.5"
for r in $(seq 1 "$ROUNDS"); do
  for w in ${WORKLOADS:-loop_greedy sampled greedy_penalty}; do
    for m in $MODES; do
      out=$(prlimit --as=8000000000 -- $E generate "$M" "$P1" -n "$N" ${W[$w]} --spec "$m" $EXTRA --json 2>/dev/null)
      echo "$out" | python3 -c "import json,sys; j=json.load(sys.stdin); print('$r', '$w', '$m', round(j['decode_tok_s'],3), j['draft_tokens'], j['draft_accepted'], len(j['tokens']), hash(tuple(j['tokens']))%100000)"
    done
  done
done
