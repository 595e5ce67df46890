//===- FormatNumber.cpp - Numbers in messages, as the user wrote them -----===//

#include "ddp/Support/FormatNumber.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

std::string ddp::formatShortest(double value) {
  // 17 significant digits read back as any double; most need far fewer.
  char buffer[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  // %g writes a number with fewer digits than its integer part in exponent
  // form (370 at 2 digits is 3.7e+02); write those out as a user would, up
  // to the 17 digits of a double.
  if (const char *e = std::strchr(buffer, 'e')) {
    int exponent = std::atoi(e + 1);
    if (exponent >= 0 && exponent < 17)
      std::snprintf(buffer, sizeof(buffer), "%.*g", exponent + 1, value);
  }
  return buffer;
}

static void writeValue(llvm::json::OStream &json,
                       const llvm::json::Value &value) {
  if (const llvm::json::Object *object = value.getAsObject()) {
    std::vector<const llvm::json::Object::value_type *> entries;
    for (const auto &entry : *object)
      entries.push_back(&entry);
    llvm::sort(entries, [](const auto *a, const auto *b) {
      return a->first < b->first;
    });
    json.object([&] {
      for (const auto *entry : entries)
        json.attributeBegin(entry->first), writeValue(json, entry->second),
            json.attributeEnd();
    });
    return;
  }
  if (const llvm::json::Array *array = value.getAsArray()) {
    json.array([&] {
      for (const llvm::json::Value &element : *array)
        writeValue(json, element);
    });
    return;
  }
  // Integers as they are; other numbers in their shortest form.
  std::optional<double> number = value.getAsNumber();
  if (number && !value.getAsInteger() && !value.getAsUINT64())
    json.rawValue(ddp::formatShortest(*number));
  else
    json.value(value);
}

std::string ddp::formatBytes(int64_t bytes) {
  const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes);
  unsigned unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  if (unit == 0)
    os << bytes << " bytes";
  else
    os << llvm::format("%.2f ", value) << units[unit];
  return text;
}

std::string ddp::formatCount(double value) {
  static const std::pair<double, const char *> units[] = {
      {1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}};
  char buffer[32];
  // The unit of the value as it will be rounded: 999950 reads 1.00M, not
  // 1000K.
  auto digits = [](double scaled) {
    return std::fabs(scaled) < 10 ? 2 : (std::fabs(scaled) < 100 ? 1 : 0);
  };
  auto rounded = [&](double scaled) {
    double factor = std::pow(10.0, digits(scaled));
    return std::round(scaled * factor) / factor;
  };
  if (std::fabs(std::round(value)) < 1000) {
    std::snprintf(buffer, sizeof(buffer), "%.0f", value);
    return buffer;
  }
  for (size_t unit = std::size(units); unit-- > 0;) {
    auto [scale, suffix] = units[unit];
    double scaled = value / scale;
    // The next larger unit when this one would round to 1000.
    if (unit > 0 && std::fabs(rounded(scaled)) >= 1000)
      continue;
    std::snprintf(buffer, sizeof(buffer), "%.*f%s", digits(rounded(scaled)),
                  rounded(scaled), suffix);
    return buffer;
  }
  return buffer;
}

void ddp::writeJSONShortest(llvm::raw_ostream &os,
                            const llvm::json::Value &value, unsigned indent) {
  llvm::json::OStream json(os, indent);
  writeValue(json, value);
}
