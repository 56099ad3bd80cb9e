// ember bench-ssd MODEL: the SSD cold tier's measurements (src/bench/ssd_bench.h) — restart + restore vs
// re-prefill, startup scan of many entries, restore vs sequential read bandwidth, decode while writing,
// peak memory while writing and restoring one large entry.
#include <iostream>

#include "bench/ssd_bench.h"
#include "cli/command.h"
#include "engine/engine.h"
#include "engine/load_progress.h"
#include "util/progress.h"

namespace ember::cli {
namespace {

struct Args {
  std::string model, only;
  int threads = 0;
  SsdBenchOptions o;
};

Status Run(Args& a) {
  if (!a.only.empty()) {
    a.o.restart = a.only.find("restart") != std::string::npos;
    a.o.scan = a.only.find("scan") != std::string::npos;
    a.o.read = a.only.find("read") != std::string::npos;
    a.o.decode = a.only.find("decode") != std::string::npos;
    a.o.peak = a.only.find("peak") != std::string::npos;
  }
  EngineOptions eo;
  eo.threads = a.threads;
  eo.load_tokenizer = false;
  eo.n_ctx = a.o.prefix_tokens + 128;
  EMBER_ASSIGN_OR_RETURN(auto engine, LoadEngineWithProgress(a.model, eo, {.enabled = ShowProgress()}));
  std::cerr << "bench-ssd: " << engine->threads() << " threads, scratch " << a.o.dir << "\n";
  ProgressBar bar("bench-ssd", 0, {.enabled = ShowProgress()});
  a.o.progress = &bar;
  StatusOr<SsdBenchResult> result = RunSsdBench(*engine, a.o);
  bar.Finish();
  EMBER_ASSIGN_OR_RETURN(SsdBenchResult r, std::move(result));
  PrintSsdBench(r, a.o, std::cout);
  return Status::Ok();
}

void Setup(CLI::App& app, std::function<void(int)> set_exit) {
  auto a = std::make_shared<Args>();
  a->o.dir = "/tmp/ember-bench-ssd";
  auto* c = app.add_subcommand("bench-ssd", "SSD prompt-cache measurements: restart+restore, scan, read bandwidth, decode while writing, peak memory");
  c->add_option("model", a->model, "GGUF model")->required();
  c->add_option("--dir", a->o.dir, "Scratch directory on the disk to measure")->capture_default_str();
  c->add_option("--prefix-tokens", a->o.prefix_tokens, "Restart benchmark prefix length")->capture_default_str();
  c->add_option("--scan-entries", a->o.scan_entries, "Entries for the startup-scan benchmark")->capture_default_str();
  c->add_option("--read-bytes", a->o.read_bytes, "Entry size for the read benchmark")->capture_default_str();
  c->add_option("--decode-tokens", a->o.decode_tokens, "Tokens decoded per decode measurement")->capture_default_str();
  c->add_option("--peak-bytes", a->o.peak_bytes, "Entry size for the peak-memory benchmark")->capture_default_str();
  c->add_option("--only", a->only, "Comma list of restart,scan,read,decode,peak (default: all but peak)");
  c->add_option("--threads", a->threads, "Threads (default: physical cores)");
  c->callback([a, set_exit] {
    Status st = Run(*a);
    if (!st.ok()) std::cerr << "ember bench-ssd: " << st.ToString() << "\n";
    set_exit(st.ok() ? 0 : 1);
  });
}

EMBER_REGISTER_COMMAND("bench-ssd", Setup);

}  // namespace
}  // namespace ember::cli
