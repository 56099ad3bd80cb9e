// ember gen-model: a GGUF model with seeded random weights and a real tokenizer.
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "genmodel/gen_model.h"
#include "util/progress.h"
#include "util/stopwatch.h"

namespace ember::cli {
namespace {

struct Args {
  GenModelOptions o;
  std::string out, type = "f32", type_embd, type_output;
  bool untied = false, json = false;
};

Status ParseTypes(Args& a) {
  auto parse = [](const std::string& s, GgmlType* t) -> Status {
    auto v = GgmlTypeFromName(s);
    if (!v) return InvalidArgument("unknown weight type '" + s + "' (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs, mxfp4)");
    *t = *v;
    return Status::Ok();
  };
  EMBER_RETURN_IF_ERROR(parse(a.type, &a.o.type));
  EMBER_RETURN_IF_ERROR(parse(a.type_embd.empty() ? a.type : a.type_embd, &a.o.type_embd));
  EMBER_RETURN_IF_ERROR(parse(a.type_output.empty() ? a.type : a.type_output, &a.o.type_output));
  a.o.tied = !a.untied;
  return Status::Ok();
}

int Run(Args& a) {
  Status st = ParseTypes(a);
  GenModelReport report;
  const Stopwatch t0;
  // Parameters made so far, per tensor: on a terminal only, never with --json.
  ProgressBar bar("gen-model", 0, {.enabled = ShowProgress(a.json)});
  a.o.progress = bar.Callback();
  if (st.ok()) st = GenerateModel(a.o, a.out, &report);
  bar.Finish();
  if (!st.ok()) {
    std::cerr << "ember gen-model: " << st.ToString() << "\n";
    return 1;
  }
  const double secs = t0.ElapsedSeconds();
  if (a.json) {
    nlohmann::json j = {{"out", a.out}, {"arch", a.o.arch}, {"tokenizer", a.o.tokenizer},
                        {"n_vocab", report.n_vocab}, {"n_params", report.n_params},
                        {"weight_bytes", report.n_bytes}, {"fallbacks", report.fallbacks}, {"seconds", secs}};
    std::cout << j.dump() << "\n";
  } else {
    std::cout << "wrote " << a.out << ": " << a.o.arch << ", " << a.o.tokenizer << " tokenizer (" << report.n_vocab
              << " tokens), " << report.n_params << " parameters, " << report.n_bytes << " weight bytes in " << secs
              << " s\n";
    for (const auto& f : report.fallbacks) std::cout << "  type fallback: " << f << "\n";
  }
  return 0;
}

void Setup(CLI::App& app, std::function<void(int)> set_exit) {
  auto a = std::make_shared<Args>();
  auto* c = app.add_subcommand("gen-model", "Write a GGUF model with seeded random weights and a real tokenizer");
  c->add_option("--out", a->out, "Output .gguf path")->required();
  c->add_option("--arch", a->o.arch, "Architecture: llama | qwen2 | qwen3 | gemma3 | qwen35 (hybrid: gated delta net + attention) | "
                 "qwen3moe (mixture of experts) | qwen35moe (the hybrid with experts and a shared expert)")->capture_default_str();
  c->add_option("--tokenizer", a->o.tokenizer, "Tokenizer family: llama3 | qwen3 | qwen35 | gemma3 (qwen35: the qwen3 "
                "vocabulary with Qwen3.5's pre-tokenizer)")->capture_default_str();
  c->add_option("--n-layer", a->o.n_layer, "Transformer blocks")->capture_default_str();
  c->add_option("--n-embd", a->o.n_embd, "Embedding width")->capture_default_str();
  c->add_option("--n-head", a->o.n_head, "Attention heads")->capture_default_str();
  c->add_option("--n-head-kv", a->o.n_head_kv, "KV heads (GQA)")->capture_default_str();
  c->add_option("--n-ff", a->o.n_ff, "Feed-forward width")->capture_default_str();
  c->add_option("--head-dim", a->o.head_dim, "Head dimension (default n-embd / n-head)");
  c->add_option("--ctx", a->o.n_ctx, "Context length written to the metadata")->capture_default_str();
  c->add_option("--rope-base", a->o.rope_base, "RoPE base (default: llama 500000, qwen 1000000)");
  c->add_option("--rope-scaling", a->o.rope_scaling, "none | llama3 (writes rope_freqs.weight)")->capture_default_str();
  c->add_option("--sliding-window", a->o.sliding_window, "gemma3: local layers' window (-1: 512; 0: none)")
      ->capture_default_str();
  c->add_option("--swa-pattern", a->o.swa_pattern, "gemma3: every N-th layer is global (0: all local)")
      ->capture_default_str();
  c->add_option("--rope-base-swa", a->o.rope_base_swa, "gemma3: RoPE base of the local layers")->capture_default_str();
  c->add_option("--logit-softcap", a->o.logit_softcap, "gemma3: final_logit_softcapping (0: none)")
      ->capture_default_str();
  c->add_option("--full-attention-interval", a->o.full_attention_interval,
                 "qwen35: every N-th layer is attention, the others gated delta net")->capture_default_str();
  c->add_option("--ssm-state", a->o.ssm_state, "qwen35: delta-net head dim (ssm.state_size)")->capture_default_str();
  c->add_option("--ssm-groups", a->o.ssm_groups, "qwen35: delta-net q/k heads (ssm.group_count)")->capture_default_str();
  c->add_option("--ssm-heads", a->o.ssm_heads, "qwen35: delta-net v heads (ssm.time_step_rank)")->capture_default_str();
  c->add_option("--ssm-conv", a->o.ssm_conv, "qwen35: conv1d taps (ssm.conv_kernel)")->capture_default_str();
  c->add_option("--rope-dims", a->o.rope_dims, "qwen35: rotated dims per head (default head-dim / 4)");
  c->add_option("--experts", a->o.n_expert, "qwen3moe, qwen35moe: experts per layer (expert_count)")->capture_default_str();
  c->add_option("--experts-used", a->o.n_expert_used, "qwen3moe, qwen35moe: experts each token is routed to (top-k)")
      ->capture_default_str();
  c->add_option("--expert-ff", a->o.n_ff_exp, "qwen3moe, qwen35moe: each expert's FFN width (default --n-ff / --experts-used)");
  c->add_option("--router-std", a->o.router_std, "qwen3moe: router weights' std (default 2 / sqrt(n-embd))");
  c->add_option("--shared-expert-ff", a->o.n_ff_shexp, "qwen35moe: the shared expert's FFN width (default --n-ff)");
  c->add_option("--mtp-layers", a->o.mtp_layers, "qwen35: multi-token-prediction blocks after the trunk (never run)")
      ->capture_default_str();
  c->add_option("--type", a->type, "Weight type of the matrices: f32 | f16 | bf16 | q8_0 | q4_0 | q4_1 | q5_0 | q5_1 | "
                "q2_k | q3_k | q4_k | q5_k | q6_k | iq4_nl | iq4_xs | mxfp4")->capture_default_str();
  c->add_option("--type-embd", a->type_embd, "Type of token_embd.weight (default: --type)");
  c->add_option("--type-output", a->type_output, "Type of output.weight (default: --type)");
  c->add_flag("--untied", a->untied, "Write a separate output.weight (default: tied to token_embd)");
  c->add_option("--seed", a->o.seed, "Random seed")->capture_default_str();
  c->add_option("--output-std", a->o.output_std, "Std of the output matrix (large = decisive top-1)");
  c->add_flag("--vocab-only", a->o.vocab_only, "Write metadata and tokenizer only");
  c->add_option("--name", a->o.name, "general.name");
  c->add_flag("--json", a->json, "Print a JSON summary");
  c->callback([a, set_exit] { set_exit(Run(*a)); });
}

EMBER_REGISTER_COMMAND("gen-model", Setup);

}  // namespace
}  // namespace ember::cli
