// The Prometheus text writer (format 0.0.4) and the metrics vela::metrics_text() renders
// without a server: families, escaping, histogram buckets, number spelling.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "vela/ops/metrics.hpp"
#include "vela/vela.hpp"

namespace vela {
namespace {

TEST(PrometheusWriter, FamilyHelpAndTypeLines) {
    PrometheusWriter w;
    w.family("a_total", "Line one\nback\\slash \"quoted\"", "counter");
    w.sample("a_total", {}, std::uint64_t{7});
    EXPECT_EQ(w.text(),
              "# HELP a_total Line one\\nback\\\\slash \"quoted\"\n"
              "# TYPE a_total counter\n"
              "a_total 7\n");
}

TEST(PrometheusWriter, LabelValuesAreEscaped) {
    PrometheusWriter w;
    w.sample("m", {{"route", "/a\"b\\c\nd"}, {"x", ""}}, std::uint64_t{1});
    EXPECT_EQ(w.text(), "m{route=\"/a\\\"b\\\\c\\nd\",x=\"\"} 1\n");
    EXPECT_EQ(PrometheusWriter::escape_label("plain/{id:int}"), "plain/{id:int}");
}

TEST(PrometheusWriter, DoublesIncludingSpecialValues) {
    PrometheusWriter w;
    w.sample("g", {}, 0.25);
    w.sample("g", {}, std::numeric_limits<double>::infinity());
    w.sample("g", {}, -std::numeric_limits<double>::infinity());
    w.sample("g", {}, std::nan(""));
    w.sample("g", {}, 1e-9);
    EXPECT_EQ(w.text(), "g 0.25\ng +Inf\ng -Inf\ng NaN\ng 1e-09\n");
}

TEST(PrometheusWriter, HistogramIsCumulativeWithInfSumAndCount) {
    PrometheusWriter w;
    const double bounds[] = {0.1, 1.0};
    const std::uint64_t counts[] = {2, 3, 1};  // <=0.1, (0.1,1], >1
    w.family("h_seconds", "A histogram.", "histogram");
    w.histogram("h_seconds", {{"route", "/x"}}, bounds, counts, 2, 4.5);
    EXPECT_EQ(w.text(),
              "# HELP h_seconds A histogram.\n"
              "# TYPE h_seconds histogram\n"
              "h_seconds_bucket{route=\"/x\",le=\"0.1\"} 2\n"
              "h_seconds_bucket{route=\"/x\",le=\"1\"} 5\n"
              "h_seconds_bucket{route=\"/x\",le=\"+Inf\"} 6\n"
              "h_seconds_sum{route=\"/x\"} 4.5\n"
              "h_seconds_count{route=\"/x\"} 6\n");
}

TEST(PrometheusWriter, LatencyBucketsAscend) {
    for (std::size_t i = 1; i < kLatencyBucketCount; ++i)
        EXPECT_LT(kLatencyBuckets[i - 1], kLatencyBuckets[i]);
}

TEST(AppMetrics, OffByDefaultAndEmptyText) {
    App app;
    app.get("/", [] { return "hi"; });
    EXPECT_EQ(vela::metrics_text(app), "");
}

TEST(AppMetrics, TextBeforeAnyLoopHasFamiliesAndNoSamplesOfRoutes) {
    App app;
    app.get("/items/{id:int}", [] { return "x"; });
    vela::metrics(app);
    const std::string t = vela::metrics_text(app);
    EXPECT_NE(t.find("# TYPE vela_http_requests_total counter\n"), std::string::npos) << t;
    EXPECT_NE(t.find("# TYPE vela_http_request_duration_seconds histogram\n"), std::string::npos);
    EXPECT_NE(t.find("# TYPE vela_open_connections gauge\n"), std::string::npos);
    EXPECT_EQ(t.find("vela_http_requests_total{"), std::string::npos) << t;
}

TEST(AppMetrics, MetricsAfterStartIsRefused) {
    App app;
    app.get("/", [] { return "hi"; });
    app.listen("127.0.0.1:0");
    app.start(1);
    EXPECT_THROW(vela::metrics(app), std::logic_error);
    EXPECT_THROW(vela::stall_watchdog(app), std::logic_error);
    app.stop();
    app.wait();
}

}  // namespace
}  // namespace vela
