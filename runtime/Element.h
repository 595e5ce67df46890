//===- Element.h - Element types and their conversions ----------*- C++ -*-===//
//
// The four element types of ddp and the rounding rules every kernel follows.
// The same code is compiled for the host and (by nvcc) for CUDA devices, so
// that both backends round identically: a result computed on either is
// bitwise the same for the same inputs.
//
//===----------------------------------------------------------------------===//

#ifndef DDPRT_ELEMENT_H
#define DDPRT_ELEMENT_H

#include "ddp/Runtime/ddprt.h"

#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define DDPRT_HOST_DEVICE __host__ __device__
#else
#define DDPRT_HOST_DEVICE
#endif

namespace ddprt {

enum class DType : int32_t {
  F16 = DDPRT_DTYPE_F16,
  BF16 = DDPRT_DTYPE_BF16,
  F32 = DDPRT_DTYPE_F32,
  F64 = DDPRT_DTYPE_F64,
};

inline bool isValidDType(int32_t dtype) {
  return dtype >= DDPRT_DTYPE_F16 && dtype <= DDPRT_DTYPE_F64;
}

inline int64_t elementSize(DType dtype) {
  switch (dtype) {
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::F32:
    return 4;
  case DType::F64:
    return 8;
  }
  return 0;
}

/// f16 and bf16, which the collectives reduce in f32.
inline bool is16Bit(DType dtype) {
  return dtype == DType::F16 || dtype == DType::BF16;
}

inline const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  }
  return "?";
}

template <typename To, typename From>
DDPRT_HOST_DEVICE inline To bitCast(From from) {
  static_assert(sizeof(To) == sizeof(From), "bitCast needs equal sizes");
  To to;
  memcpy(&to, &from, sizeof(To));
  return to;
}

/// IEEE binary16 and bfloat16 as storage: the bits, no arithmetic.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

DDPRT_HOST_DEVICE inline float halfToFloat(Half h) {
  uint32_t sign = uint32_t(h.bits & 0x8000u) << 16;
  uint32_t exponent = (h.bits >> 10) & 0x1fu;
  uint32_t mantissa = h.bits & 0x3ffu;
  if (exponent == 0x1f) // Inf or NaN, payload kept.
    return bitCast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) { // Zero or subnormal: mantissa * 2^-24 is exact.
    float magnitude = float(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  return bitCast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

/// Round to nearest even, overflow to Inf, NaN stays a (quiet) NaN.
DDPRT_HOST_DEVICE inline Half floatToHalf(float value) {
  uint32_t bits = bitCast<uint32_t>(value);
  uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) // NaN: quiet it, keep the top payload bits.
    return {uint16_t(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu))};
  if (magnitude >= 0x477ff000u) // >= 65520 rounds to Inf (65504 is odd).
    return {uint16_t(sign | 0x7c00u)};
  if (magnitude >= 0x38800000u) { // Normal in f16: >= 2^-14.
    uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
    return {uint16_t(sign | ((rounded - 0x38000000u) >> 13))};
  }
  if (magnitude <= 0x33000000u) // <= 2^-25: half of the least subnormal.
    return {sign};
  // Subnormal in f16: count units of 2^-24 from the 24-bit significand.
  uint32_t exponent = magnitude >> 23;
  uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126 - exponent; // in [14, 24]
  uint32_t quotient = significand >> shift;
  uint32_t remainder = significand & ((1u << shift) - 1);
  uint32_t halfway = 1u << (shift - 1);
  if (remainder > halfway || (remainder == halfway && (quotient & 1u)))
    ++quotient; // May carry into the least normal: still the right bits.
  return {uint16_t(sign | quotient)};
}

DDPRT_HOST_DEVICE inline float bfloat16ToFloat(BFloat16 b) {
  return bitCast<float>(uint32_t(b.bits) << 16);
}

DDPRT_HOST_DEVICE inline BFloat16 floatToBFloat16(float value) {
  uint32_t bits = bitCast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return {uint16_t((bits >> 16) | 0x40u)};
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return {uint16_t(bits >> 16)};
}

/// Rounds to f32 with round-to-odd. Rounding a double to a 16-bit type
/// through f32 would round twice; rounding to odd first, with more than two
/// spare bits, makes the second rounding (to nearest even) exact.
DDPRT_HOST_DEVICE inline float doubleToFloatRoundToOdd(double value) {
  float rounded = float(value);
  if (double(rounded) == value || value != value)
    return rounded;
  uint32_t bits = bitCast<uint32_t>(rounded);
  double roundedMagnitude = rounded < 0 ? -double(rounded) : double(rounded);
  double valueMagnitude = value < 0 ? -value : value;
  if (roundedMagnitude > valueMagnitude)
    bits -= 1; // Toward zero; Inf becomes the largest finite float.
  return bitCast<float>(bits | 1u);
}

/// How each element type is loaded for arithmetic and stored back: 16-bit
/// types and f32 compute in f32, f64 in f64.
template <typename T> struct ElementTraits;

template <> struct ElementTraits<Half> {
  using Acc = float;
  static constexpr DType dtype = DType::F16;
  DDPRT_HOST_DEVICE static float toFloat(Half v) { return halfToFloat(v); }
  DDPRT_HOST_DEVICE static double toDouble(Half v) { return halfToFloat(v); }
  DDPRT_HOST_DEVICE static Half fromFloat(float v) { return floatToHalf(v); }
  DDPRT_HOST_DEVICE static Half fromDouble(double v) {
    return floatToHalf(doubleToFloatRoundToOdd(v));
  }
};

template <> struct ElementTraits<BFloat16> {
  using Acc = float;
  static constexpr DType dtype = DType::BF16;
  DDPRT_HOST_DEVICE static float toFloat(BFloat16 v) {
    return bfloat16ToFloat(v);
  }
  DDPRT_HOST_DEVICE static double toDouble(BFloat16 v) {
    return bfloat16ToFloat(v);
  }
  DDPRT_HOST_DEVICE static BFloat16 fromFloat(float v) {
    return floatToBFloat16(v);
  }
  DDPRT_HOST_DEVICE static BFloat16 fromDouble(double v) {
    return floatToBFloat16(doubleToFloatRoundToOdd(v));
  }
};

template <> struct ElementTraits<float> {
  using Acc = float;
  static constexpr DType dtype = DType::F32;
  DDPRT_HOST_DEVICE static float toFloat(float v) { return v; }
  DDPRT_HOST_DEVICE static double toDouble(float v) { return v; }
  DDPRT_HOST_DEVICE static float fromFloat(float v) { return v; }
  DDPRT_HOST_DEVICE static float fromDouble(double v) { return float(v); }
};

template <> struct ElementTraits<double> {
  using Acc = double;
  static constexpr DType dtype = DType::F64;
  DDPRT_HOST_DEVICE static float toFloat(double v) { return float(v); }
  DDPRT_HOST_DEVICE static double toDouble(double v) { return v; }
  DDPRT_HOST_DEVICE static double fromFloat(float v) { return v; }
  DDPRT_HOST_DEVICE static double fromDouble(double v) { return v; }
};

/// Loads `value` as `Acc` (float or double), rounding to nearest even when
/// that narrows (f64 to f32).
template <typename Acc, typename T>
DDPRT_HOST_DEVICE inline Acc loadAs(T value) {
  if constexpr (sizeof(Acc) == sizeof(double))
    return ElementTraits<T>::toDouble(value);
  else
    return ElementTraits<T>::toFloat(value);
}

/// Stores `value` (float or double) as `T`, rounding once to nearest even.
template <typename T, typename Acc>
DDPRT_HOST_DEVICE inline T storeAs(Acc value) {
  if constexpr (sizeof(Acc) == sizeof(double))
    return ElementTraits<T>::fromDouble(value);
  else
    return ElementTraits<T>::fromFloat(value);
}

/// Converts between element types with a single rounding to nearest even.
template <typename To, typename From>
DDPRT_HOST_DEVICE inline To convertElement(From value) {
  // Every type converts exactly to f64, and every type but f64 exactly to
  // f32, so a conversion goes through the wider of the two.
  if constexpr (sizeof(From) == sizeof(double) || sizeof(To) == sizeof(double))
    return storeAs<To>(ElementTraits<From>::toDouble(value));
  else
    return storeAs<To>(ElementTraits<From>::toFloat(value));
}

/// Calls `fn` with a value of the C++ type stored for `dtype`, which must be
/// valid.
template <typename Fn> auto dispatchDType(DType dtype, Fn &&fn) {
  switch (dtype) {
  case DType::F16:
    return fn(Half{});
  case DType::BF16:
    return fn(BFloat16{});
  case DType::F32:
    return fn(float{});
  case DType::F64:
    break;
  }
  return fn(double{});
}

} // namespace ddprt

#endif // DDPRT_ELEMENT_H
