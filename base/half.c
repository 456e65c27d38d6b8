/*
 * base/half.c - IEEE half and bfloat16 conversions (see half.h).
 */
#include "base/half.h"

#include <math.h>
#include <string.h>

uint16_t ifd_f32_to_f16(float f) {
  uint32_t x, sign, exp, mant, h, rem, half;
  int e, shift;

  memcpy(&x, &f, sizeof(x));
  sign = (x >> 16) & 0x8000u;
  exp = (x >> 23) & 0xffu;
  mant = x & 0x7fffffu;
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (mant != 0 ? 0x200u : 0));
  e = (int)exp - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {
    /* Subnormal half: value = M * 2^(exp-150) = h * 2^-24. */
    if (e < -10) return (uint16_t)sign;
    mant |= 0x800000u;
    shift = 14 - e;
    h = mant >> shift;
    rem = mant & ((1u << shift) - 1);
    half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) h++;
    return (uint16_t)(sign | h);
  }
  h = ((uint32_t)e << 10) | (mant >> 13);
  rem = mant & 0x1fffu;
  /* A carry out of the mantissa bumps the exponent, up to infinity: right. */
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
  return (uint16_t)(sign | h);
}

float ifd_f16_to_f32(uint16_t h) {
  uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
  uint32_t exp = ((uint32_t)h >> 10) & 0x1fu;
  uint32_t mant = (uint32_t)h & 0x3ffu;
  uint32_t x;
  float f;

  if (exp == 0) {
    f = ldexpf((float)mant, -24);
    return sign != 0 ? -f : f;
  }
  if (exp == 31)
    x = sign | 0x7f800000u | (mant << 13);
  else
    x = sign | ((exp + 112u) << 23) | (mant << 13);
  memcpy(&f, &x, sizeof(f));
  return f;
}

uint16_t ifd_f32_to_bf16(float f) {
  uint32_t x;

  memcpy(&x, &f, sizeof(x));
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

float ifd_bf16_to_f32(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;

  memcpy(&f, &x, sizeof(f));
  return f;
}
