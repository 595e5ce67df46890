//===- FormatNumber.cpp - Numbers in messages, as the user wrote them -----===//

#include "ddp/Support/FormatNumber.h"

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
