#include "bench/preflight.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "bench/machine_probe.h"
#include "bench/proc_parse.h"

namespace ember::bench {
namespace {

const std::string kFixtures = std::string(EMBER_SOURCE_DIR) + "/tests/bench/fixtures/";

PreflightInputs Load(const std::string& machine) {
  PreflightInputs in;
  in.before = ReadMachineSample(kFixtures + machine + "/t0");
  in.after = ReadMachineSample(kFixtures + machine + "/t1");
  in.info = ReadMachineInfo(kFixtures + machine + "/t1");
  in.window_s = 1.0;
  in.own_pid = 4000;  // the recorded `ember h2h`; its node child is the benchmark, not interference
  in.at = "2026-11-29T20:00:00Z";
  return in;
}

const Check* Find(const PreflightReport& r, const std::string& name) {
  for (const auto& c : r.checks)
    if (c.name == name) return &c;
  return nullptr;
}

CheckState StateOf(const PreflightReport& r, const std::string& name) {
  const Check* c = Find(r, name);
  EXPECT_NE(c, nullptr) << name;
  return c ? c->state : CheckState::kUnavailable;
}

TEST(ProcParse, Meminfo) {
  auto m = ParseMeminfo("MemTotal:       1000 kB\nMemFree: 10 kB\nMemAvailable:    400 kB\nSwapTotal: 300 kB\nSwapFree: 100 kB\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->total_kb, 1000u);
  EXPECT_EQ(m->available_kb, 400u);
  EXPECT_EQ(m->swap_used_kb(), 200u);
  EXPECT_FALSE(ParseMeminfo("MemFree: 10 kB\n"));
  EXPECT_FALSE(ParseMeminfo(""));
}

TEST(ProcParse, VmstatPressureLoad) {
  auto v = ParseVmstat("nr_free_pages 5\npswpin 12\npswpout 34\n");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->pswpin, 12u);
  EXPECT_EQ(v->pswpout, 34u);
  EXPECT_FALSE(ParseVmstat("pswpin 1\n"));
  auto p = ParsePressure("some avg10=62.27 avg60=34.85 avg300=11.58 total=46836988\nfull avg10=1.50 avg60=0 avg300=0 total=0\n");
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(p->some_avg10, 62.27);
  EXPECT_DOUBLE_EQ(p->full_avg10, 1.5);
  EXPECT_FALSE(ParsePressure("garbage"));
  EXPECT_DOUBLE_EQ(*ParseLoadavg1("2.18 0.92 0.39 2/103 10423\n"), 2.18);
  EXPECT_FALSE(ParseLoadavg1(""));
}

TEST(ProcParse, PidStatWithParenthesesInComm) {
  std::string line = "77 (a) b (c)) R 5 77 77 0 -1 0 0 0 0 0 120 30 0 0 20 0 1 0 999 100 42 0 0";
  auto s = ParsePidStat(line);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->pid, 77);
  EXPECT_EQ(s->comm, "a) b (c)");
  EXPECT_EQ(s->ppid, 5);
  EXPECT_EQ(s->cpu_ticks, 150u);
  EXPECT_EQ(s->start_ticks, 999u);
  EXPECT_EQ(s->rss_pages, 42u);
  EXPECT_FALSE(ParsePidStat("12 (x) R 1 2"));
  EXPECT_FALSE(ParsePidStat("no parens at all"));
}

TEST(ProcParse, SmallFormats) {
  EXPECT_EQ(ParseCmdline(std::string("node\0runner.mjs\0bench\0", 23)), "node runner.mjs bench");
  EXPECT_EQ(*ParseCpuListCount("0-3,6,8-9\n"), 7);
  EXPECT_EQ(*ParseCpuListCount("0"), 1);
  EXPECT_FALSE(ParseCpuListCount("3-1"));
  EXPECT_FALSE(ParseCpuListCount(""));
  EXPECT_EQ(ParseBracketedMode("always [madvise] never\n"), "madvise");
  EXPECT_EQ(ParseBracketedMode("never\n"), "never");
  EXPECT_EQ(ParseCpuModel("processor: 0\nmodel name\t: AMD EPYC 9R45\n"), "AMD EPYC 9R45");
}

TEST(Preflight, HealthyMachineIsClear) {
  PreflightReport r = EvaluatePreflight(Load("healthy"), {});
  EXPECT_TRUE(r.ok) << PreflightToText(r);
  EXPECT_TRUE(r.problems.empty());
  EXPECT_EQ(r.info.cores, 2);
  EXPECT_EQ(r.info.governor, "performance");
  EXPECT_EQ(r.info.boost, "on");
  EXPECT_EQ(r.info.thp, "madvise");
  EXPECT_EQ(r.info.hostname, "benchbox");
  EXPECT_EQ(StateOf(r, "thermal throttle"), CheckState::kOk);
  EXPECT_EQ(StateOf(r, "memory pressure"), CheckState::kOk);
  // The node runner burns 190% of a core, but it is ember's own child.
  EXPECT_TRUE(r.foreign.empty());
}

TEST(Preflight, SwappingMachineFails) {
  PreflightReport r = EvaluatePreflight(Load("swapping"), {});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(StateOf(r, "swap"), CheckState::kProblem);
  EXPECT_EQ(StateOf(r, "swap activity"), CheckState::kProblem);
  EXPECT_EQ(StateOf(r, "available memory"), CheckState::kProblem);
  EXPECT_EQ(StateOf(r, "memory pressure"), CheckState::kProblem);
  EXPECT_NEAR(*r.swap_used_mb, 1536, 1);
  EXPECT_EQ(*r.swap_pages_moved, 1200u);
  // A looser swap limit clears that one check, not the activity one.
  PreflightLimits loose;
  loose.max_swap_mb = 4096;
  EXPECT_EQ(StateOf(EvaluatePreflight(Load("swapping"), loose), "swap"), CheckState::kOk);
}

TEST(Preflight, OverloadedMachineFails) {
  PreflightReport r = EvaluatePreflight(Load("overloaded"), {});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(StateOf(r, "load"), CheckState::kProblem);
  EXPECT_EQ(StateOf(r, "cpu pressure"), CheckState::kProblem);
  EXPECT_EQ(StateOf(r, "thermal throttle"), CheckState::kProblem);
  EXPECT_EQ(*r.throttle_events_delta, 4u);  // two counters, +2 each
  EXPECT_NEAR(*r.load_ratio, 3.55, 1e-9);
  EXPECT_EQ(StateOf(r, "swap"), CheckState::kOk);
}

TEST(Preflight, HotForeignProcessFailsEvenWithTinyRss) {
  PreflightLimits lim;
  lim.allow_cmds = {"cc1plus -O2 foo.cc", "python3 train.py"};
  PreflightReport r = EvaluatePreflight(Load("hot_process"), lim);
  EXPECT_FALSE(r.ok);
  auto find = [&](int pid) {
    return std::find_if(r.foreign.begin(), r.foreign.end(), [&](const ForeignProcess& f) { return f.pid == pid; });
  };
  auto indexer = find(5100);
  ASSERT_NE(indexer, r.foreign.end());
  EXPECT_NEAR(indexer->cpu_pct, 87, 1e-9);
  EXPECT_FALSE(indexer->allowed);
  auto db = find(5200);  // idle but 3 GB resident
  ASSERT_NE(db, r.foreign.end());
  EXPECT_NEAR(db->rss_mb, 3125, 1);
  EXPECT_FALSE(db->allowed);
  auto cc = find(5300);  // 60% cpu, allow-listed, small: recorded, not a problem
  ASSERT_NE(cc, r.foreign.end());
  EXPECT_TRUE(cc->allowed);
  auto trainer = find(5400);  // allow-listed but holding 2.7 GB: refused anyway
  ASSERT_NE(trainer, r.foreign.end());
  EXPECT_FALSE(trainer->allowed);
  EXPECT_EQ(r.problems.size(), 3u) << PreflightToText(r);
  EXPECT_NE(PreflightToText(r).find("[info] allowed process: pid 5300"), std::string::npos);
  // Without the allow-list the compiler is a problem too.
  EXPECT_EQ(EvaluatePreflight(Load("hot_process"), {}).problems.size(), 4u);
}

TEST(Preflight, OwnTreeIsOnlyExcludedWhenItIsOurs) {
  PreflightInputs in = Load("healthy");
  in.own_pid = 1234567;  // someone else's benchmark: its hot node child is foreign
  PreflightReport r = EvaluatePreflight(in, {});
  EXPECT_FALSE(r.ok);
  ASSERT_EQ(r.foreign.size(), 2u);  // the 95% ember process and its 190% node child
  EXPECT_EQ(r.foreign[0].pid, 4000);
  EXPECT_EQ(r.foreign[1].pid, 4001);
}

TEST(Preflight, MissingPressureAndThrottleAreUnavailableNotProblems) {
  PreflightReport r = EvaluatePreflight(Load("no_pressure"), {});
  EXPECT_TRUE(r.ok) << PreflightToText(r);
  EXPECT_EQ(StateOf(r, "memory pressure"), CheckState::kUnavailable);
  EXPECT_EQ(StateOf(r, "cpu pressure"), CheckState::kUnavailable);
  EXPECT_EQ(StateOf(r, "thermal throttle"), CheckState::kUnavailable);
  EXPECT_FALSE(r.memory_pressure.has_value());
}

TEST(Preflight, EmptyRootDegradesGracefully) {
  PreflightInputs in;
  in.before = ReadMachineSample("/nonexistent-root");
  in.after = ReadMachineSample("/nonexistent-root");
  in.info = ReadMachineInfo("/nonexistent-root");
  PreflightReport r = EvaluatePreflight(in, {});
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(StateOf(r, "swap"), CheckState::kUnavailable);
  EXPECT_EQ(StateOf(r, "load"), CheckState::kUnavailable);
}

TEST(Preflight, JsonAndTextCarryTheVerdict) {
  PreflightReport r = EvaluatePreflight(Load("swapping"), {});
  nlohmann::json j = PreflightToJson(r);
  EXPECT_FALSE(j["ok"].get<bool>());
  EXPECT_EQ(j["machine"]["cores"], 2);
  EXPECT_EQ(j["problems"].size(), r.problems.size());
  std::string text = PreflightToText(r);
  EXPECT_NE(text.find("[FAIL] swap"), std::string::npos);
  EXPECT_NE(text.find("PROBLEMS"), std::string::npos);
}

TEST(Preflight, ModelPageCacheFraction) {
  std::string path = ::testing::TempDir() + "/preflight_model.bin";
  {
    std::ofstream out(path, std::ios::binary);
    std::string block(1 << 16, 'x');
    out << block;
  }
  auto frac = PageCacheResidentFraction(path);
  ASSERT_TRUE(frac.ok()) << frac.status().ToString();
  // Just written through the page cache, so (almost) all of it is resident.
  EXPECT_GT(*frac, 0.5);
  EXPECT_LE(*frac, 1.0);
  EXPECT_EQ(PageCacheResidentFraction("/nonexistent/model.gguf").status().code(), StatusCode::kNotFound);
  std::remove(path.c_str());
}

TEST(Preflight, LiveRunProducesAReport) {
  PreflightOptions opts;
  opts.window_s = 0.1;
  auto r = RunPreflight({}, opts);
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->info.cores, 0);
  EXPECT_FALSE(r->checks.empty());
  EXPECT_EQ(RunPreflight({}, {"/", 0.1, "/nonexistent/m.gguf"}).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace ember::bench
