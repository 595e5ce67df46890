//===- TimelineSvg.cpp - The simulated timeline as an SVG picture ---------===//
//
// Written by hand because no maintained C++ library draws a Gantt chart
// without a browser; the picture is simple: lanes, rectangles, an axis.
// Intervals narrower than a pixel that touch on one lane are merged, so the
// file stays small for steps of 100k ops.
//
//===----------------------------------------------------------------------===//

#include "ddp/Sim/SimOutput.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

#include <cmath>

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

/// Accumulates the rectangles of one lane, merging neighbours of the same
/// color closer than half a pixel.
class LaneWriter {
public:
  LaneWriter(raw_ostream &os, double y) : os(os), y(y) {}
  ~LaneWriter() { flush(); }

  void add(double x0, double x1, EventCategory category) {
    if (open && category == openCategory && x0 <= openEnd + 0.5) {
      openEnd = std::max(openEnd, x1);
      return;
    }
    flush();
    open = true;
    openStart = x0;
    openEnd = x1;
    openCategory = category;
  }

private:
  void flush() {
    if (!open)
      return;
    os << format("<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
                 "fill=\"%s\"/>\n",
                 openStart, y, std::max(openEnd - openStart, 0.5), kLaneHeight,
                 getColor(openCategory).str().c_str());
    open = false;
  }

  raw_ostream &os;
  double y;
  bool open = false;
  double openStart = 0, openEnd = 0;
  EventCategory openCategory = EventCategory::Compute;
};
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
      LaneWriter lane(os, lanesTop + index * (kLaneHeight + kLaneGap));
      for (const TimelineEvent *event : events)
        lane.add(kLabelWidth + event->start * scale,
                 kLabelWidth + event->end() * scale, event->category);
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
