#include "server/metrics.h"

#include <gtest/gtest.h>

namespace ember::server {
namespace {

TEST(Metrics, CounterTextFormat) {
  MetricsRegistry m;
  m.DefineCounter("ember_http_requests_total", "HTTP requests");
  m.Add("ember_http_requests_total", {{"route", "/v1/models"}, {"status", "200"}});
  m.Add("ember_http_requests_total", {{"route", "/v1/models"}, {"status", "200"}}, 2);
  EXPECT_EQ(m.RenderPrometheus(),
            "# HELP ember_http_requests_total HTTP requests\n"
            "# TYPE ember_http_requests_total counter\n"
            "ember_http_requests_total{route=\"/v1/models\",status=\"200\"} 3\n");
  EXPECT_EQ(m.Value("ember_http_requests_total", {{"route", "/v1/models"}, {"status", "200"}}), 3);
}

TEST(Metrics, HistogramBucketsAreCumulative) {
  MetricsRegistry m;
  m.DefineHistogram("lat", "latency", {0.1, 1});
  m.Observe("lat", {}, 0.05);
  m.Observe("lat", {}, 0.5);
  m.Observe("lat", {}, 5);
  EXPECT_EQ(m.RenderPrometheus(),
            "# HELP lat latency\n# TYPE lat histogram\n"
            "lat_bucket{le=\"0.1\"} 1\nlat_bucket{le=\"1\"} 2\nlat_bucket{le=\"+Inf\"} 3\n"
            "lat_sum 5.55\nlat_count 3\n");
}

TEST(Metrics, LabelValuesAreEscaped) {
  EXPECT_EQ(RenderLabels({{"path", "a\"b\\c\nd"}}), "{path=\"a\\\"b\\\\c\\nd\"}");
}

TEST(Metrics, UndefinedFamilyIsIgnored) {
  MetricsRegistry m;
  m.Add("nope", {});
  EXPECT_EQ(m.RenderPrometheus(), "");
}

TEST(Metrics, BackendStatsOneHeaderPerFamily) {
  BackendStats s;
  s.engine = "fake";
  s.engine_values = {{"generations", 7}};
  s.cache_tiers = {{"ram", {{"hits", 3}, {"bytes", 100, false}}, {}},
                   {"ssd", {{"hits", 1}, {"bytes", 900, false}},
                    {{"restore_ms", {1, 10}, {2, 3}, 3, 12.5}}}};
  const std::string text = RenderBackendStatsPrometheus(s);
  EXPECT_NE(text.find("# TYPE ember_engine_generations_total counter\nember_engine_generations_total 7\n"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE ember_cache_hits_total counter\nember_cache_hits_total{tier=\"ram\"} 3\n"
                      "ember_cache_hits_total{tier=\"ssd\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE ember_cache_bytes gauge\n"), std::string::npos);
  EXPECT_NE(text.find("ember_cache_restore_ms_bucket{tier=\"ssd\",le=\"10\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("ember_cache_restore_ms_count{tier=\"ssd\"} 3\n"), std::string::npos);
  // Exactly one TYPE line per family.
  EXPECT_EQ(text.find("# TYPE ember_cache_hits_total"), text.rfind("# TYPE ember_cache_hits_total"));
}

TEST(Metrics, BatchValuesAndLanesAreTheirOwnFamilies) {
  BackendStats s;
  s.batch_values = {{"steps", 12}, {"running", 3, false}};
  s.lanes = {{0, 5, 2, 100, 40}, {1, 1, 0, 7, 0}};
  const std::string text = RenderBackendStatsPrometheus(s);
  EXPECT_NE(text.find("# TYPE ember_batch_steps_total counter\nember_batch_steps_total 12\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE ember_batch_running gauge\nember_batch_running 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE ember_lane_requests_total counter\n"
                      "ember_lane_requests_total{lane=\"0\"} 5\nember_lane_requests_total{lane=\"1\"} 1\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("ember_lane_cache_hits_total{lane=\"0\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("ember_lane_prompt_tokens_total{lane=\"0\"} 100\n"), std::string::npos);
  EXPECT_NE(text.find("ember_lane_cached_tokens_total{lane=\"0\"} 40\n"), std::string::npos);
  EXPECT_EQ(text.find("# TYPE ember_lane_requests_total"), text.rfind("# TYPE ember_lane_requests_total"));
}

TEST(Metrics, ValueFormatting) {
  EXPECT_EQ(FormatMetricValue(3), "3");
  EXPECT_EQ(FormatMetricValue(0.25), "0.25");
  EXPECT_EQ(FormatMetricValue(1.0 / 0.0), "+Inf");
}

}  // namespace
}  // namespace ember::server
