//===- TimelineSvg.cpp - The simulated timeline as an SVG picture ---------===//
//
// Written by hand because no maintained C++ library draws a Gantt chart
// without a browser; the picture is simple: lanes, rectangles, an axis.
// Each lane is drawn as per-pixel occupancy (LaneWriter), so that its
// coloured share is its stream's busy share.
//
//===----------------------------------------------------------------------===//

#include "ddp/Sim/SimOutput.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

#include <algorithm>
#include <cmath>
#include <vector>

using namespace llvm;
using namespace ddp::sim;

namespace {
constexpr double kPlotWidth = 1000;
constexpr double kLabelWidth = 150;
constexpr double kLaneHeight = 28;
constexpr double kLaneGap = 8;
constexpr double kTop = 40;
constexpr double kMargin = 20;

StringRef getColor(EventCategory category) {
  switch (category) {
  case EventCategory::Compute:
    return "#4e79a7";
  case EventCategory::Comm:
    return "#f28e2b";
  case EventCategory::Wait:
    return "#e15759";
  }
  llvm_unreachable("unknown event category");
}

/// 1, 2 or 5 times a power of ten, so that about eight ticks span `range`.
double getTickStep(double range) {
  double raw = range / 8;
  double power = std::pow(10, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0})
    if (factor * power >= raw)
      return factor * power;
  return 10 * power;
}

/// One lane drawn as per-pixel occupancy: each pixel column is filled from
/// the bottom by the share of its time each category covered, so that a
/// lane's coloured area is its stream's busy time (to a pixel). A sliver
/// drawn a pixel wide would show a 1 us wait as long as a 1 ms one; runs of
/// fully covered pixels of one category become one rectangle, which keeps
/// the file small for steps of 100k ops.
class LaneWriter {
public:
  LaneWriter(raw_ostream &os, double y, double secondsPerPixel)
      : os(os), y(y), secondsPerPixel(secondsPerPixel) {
    for (auto &share : coverage)
      share.assign(size_t(kPlotWidth), 0.0);
  }

  /// An event of `category` from `start` to `end` seconds.
  void add(double start, double end, EventCategory category) {
    std::vector<double> &share = coverage[unsigned(category)];
    double x0 = std::clamp(start / secondsPerPixel, 0.0, kPlotWidth);
    double x1 = std::clamp(end / secondsPerPixel, 0.0, kPlotWidth);
    for (double x = x0; x < x1;) {
      size_t pixel = std::min(size_t(x), share.size() - 1);
      double next = std::min(double(pixel + 1), x1);
      share[pixel] = std::min(1.0, share[pixel] + (next - x));
      x = next;
    }
  }

  /// The busy share of the lane in drawn pixels, by category.
  double getDrawnPixels(EventCategory category) const {
    double sum = 0;
    for (double share : coverage[unsigned(category)])
      sum += share;
    return sum;
  }

  void write() {
    // Bottom up: compute, then communication, then waits above them. Each
    // column's share becomes whole rows of the lane, the rounding carried
    // to the next column (error diffusion): a renderer blends a row two
    // colours share, which would lose area, and the carry keeps each
    // category's total within a row of its share.
    constexpr int kRows = int(kLaneHeight);
    std::vector<int> filled(size_t(kPlotWidth), 0);
    for (EventCategory category :
         {EventCategory::Compute, EventCategory::Comm, EventCategory::Wait}) {
      const std::vector<double> &share = coverage[unsigned(category)];
      std::vector<int> rows(share.size(), 0);
      double carry = 0;
      for (size_t pixel = 0; pixel < share.size(); ++pixel) {
        double want = share[pixel] * kRows + carry;
        rows[pixel] = std::clamp(int(std::lround(want)), 0,
                                 kRows - filled[pixel]);
        // At most half a row carried, so that a column where nothing of
        // the category ran gets none of it after one another category
        // filled.
        carry = std::clamp(want - rows[pixel], -0.5, 0.5);
      }
      for (size_t pixel = 0; pixel < share.size();) {
        if (rows[pixel] == 0) {
          ++pixel;
          continue;
        }
        // A run of columns this category fills alike.
        size_t end = pixel + 1;
        while (end < share.size() && rows[end] == rows[pixel] &&
               filled[end] == filled[pixel])
          ++end;
        double top = y + kRows - filled[pixel] - rows[pixel];
        os << format("<rect x=\"%.0f\" y=\"%.0f\" width=\"%zu\" "
                     "height=\"%d\" fill=\"%s\"/>\n",
                     kLabelWidth + double(pixel), top, end - pixel,
                     rows[pixel], getColor(category).str().c_str());
        for (size_t each = pixel; each < end; ++each)
          filled[each] += rows[pixel];
        pixel = end;
      }
    }
  }

private:
  raw_ostream &os;
  double y;
  double secondsPerPixel;
  std::vector<double> coverage[3];
};

/// Names events wide enough to hold their label (a bucket's collective, a
/// long GEMM), in the lane's middle.
void writeLabels(raw_ostream &os, ArrayRef<const TimelineEvent *> events,
                 double y, double scale) {
  constexpr double kCharWidth = 6.5;
  double lastEnd = -1;
  for (const TimelineEvent *event : events) {
    double x0 = kLabelWidth + event->start * scale;
    double x1 = kLabelWidth + event->end() * scale;
    std::string label = event->name;
    if (x0 < lastEnd || (x1 - x0) < kCharWidth * label.size() + 8)
      continue;
    os << format("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
                 "font-size=\"10\" fill=\"white\">",
                 (x0 + x1) / 2, y + kLaneHeight / 2 + 3);
    printHTMLEscaped(label, os);
    os << "</text>\n";
    lastEnd = x1;
  }
}
} // namespace

void ddp::sim::writeTimelineSvg(const SimResult &result, raw_ostream &os) {
  writeTimelineSvg(ArrayRef<TimelinePanel>{{"", &result}}, os);
}

void ddp::sim::writeTimelineSvg(ArrayRef<TimelinePanel> panels,
                                raw_ostream &os) {
  // Each panel is a title line and its lanes, the next panel below; the
  // longest step spans the shared axis.
  double panelsHeight = 0;
  double span = 0;
  for (const TimelinePanel &panel : panels) {
    panelsHeight +=
        kTop + panel.result->streams.size() * (kLaneHeight + kLaneGap);
    span = std::max(span, panel.result->stepTime);
  }
  double plotBottom = panelsHeight;
  double width = kLabelWidth + kPlotWidth + kMargin;
  double height = plotBottom + 70;
  if (span <= 0)
    span = 1;
  double scale = kPlotWidth / span;

  os << format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
               "height=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
               width, height);
  os << format("<rect width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", width,
               height);
  double panelTop = 0;
  for (const TimelinePanel &panel : panels) {
    const SimResult &result = *panel.result;
    os << format("<text x=\"%.0f\" y=\"%.0f\" font-size=\"14\">", kMargin,
                 panelTop + 22);
    if (!panel.title.empty()) {
      printHTMLEscaped(panel.title, os);
      os << ": ";
    }
    os << "@";
    printHTMLEscaped(result.stepName, os);
    os << " on ";
    printHTMLEscaped(result.hardwareName, os);
    os << format(": step %.3f ms, exposed communication %.3f ms</text>\n",
                 result.stepTime * 1e3, result.exposedCommTime * 1e3);
    double lanesTop = panelTop + kTop;

    // Lanes and their labels.
    size_t lanes = result.streams.size();
    for (auto [index, stream] : enumerate(result.streams)) {
      double y = lanesTop + index * (kLaneHeight + kLaneGap);
      std::string label = stream.name;
      if (!stream.axes.empty())
        label += " [" + join(stream.axes, ",") + "]";
      os << format("<text x=\"%.0f\" y=\"%.1f\">", kMargin,
                   y + kLaneHeight / 2 + 4);
      printHTMLEscaped(label, os);
      os << "</text>\n";
      os << format("<rect x=\"%.0f\" y=\"%.1f\" width=\"%.0f\" height=\"%.1f\" "
                   "fill=\"#f2f2f2\"/>\n",
                   kLabelWidth, y, kPlotWidth, kLaneHeight);
    }

    // Events, lane by lane; events of one lane are in time order.
    SmallVector<SmallVector<const TimelineEvent *>> perLane(lanes);
    for (const TimelineEvent &event : result.events)
      perLane[event.stream].push_back(&event);
    for (auto [index, events] : enumerate(perLane)) {
      double y = lanesTop + index * (kLaneHeight + kLaneGap);
      LaneWriter lane(os, y, 1.0 / scale);
      for (const TimelineEvent *event : events)
        lane.add(event->start, event->end(), event->category);
      lane.write();
      // What the lane shows, for readers and the render test: its busy
      // share in pixels of the plot's width.
      os << format("<!-- lane %zu", index);
      for (EventCategory category : {EventCategory::Compute,
                                     EventCategory::Comm, EventCategory::Wait})
        if (double pixels = lane.getDrawnPixels(category); pixels > 0)
          os << " " << stringifyEventCategory(category)
             << format("=%.1fpx", pixels);
      os << " -->\n";
      writeLabels(os, events, y, scale);
    }
    panelTop = lanesTop + lanes * (kLaneHeight + kLaneGap);
  }

  // The axis, in milliseconds.
  double spanMs = span * 1e3;
  double step = getTickStep(spanMs);
  os << format("<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" "
               "stroke=\"black\"/>\n",
               kLabelWidth, plotBottom, kLabelWidth + kPlotWidth, plotBottom);
  for (double tick = 0; tick <= spanMs * (1 + 1e-9); tick += step) {
    double x = kLabelWidth + tick / spanMs * kPlotWidth;
    os << format("<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" "
                 "stroke=\"black\"/>\n",
                 x, plotBottom, x, plotBottom + 5);
    os << format(
        "<text x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n", x,
        plotBottom + 18, tick);
  }
  os << format("<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"middle\">time (ms)"
               "</text>\n",
               kLabelWidth + kPlotWidth / 2, plotBottom + 36);

  // Legend.
  double legendX = kLabelWidth;
  for (EventCategory category :
       {EventCategory::Compute, EventCategory::Comm, EventCategory::Wait}) {
    os << format("<rect x=\"%.0f\" y=\"%.1f\" width=\"12\" height=\"12\" "
                 "fill=\"%s\"/>\n",
                 legendX, plotBottom + 46, getColor(category).str().c_str());
    os << format("<text x=\"%.0f\" y=\"%.1f\">", legendX + 16, plotBottom + 56)
       << stringifyEventCategory(category) << "</text>\n";
    legendX += 100;
  }
  os << "</svg>\n";
}
