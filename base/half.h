/*
 * base/half.h - IEEE half and bfloat16 conversions.
 */
#ifndef IFD_BASE_HALF_H
#define IFD_BASE_HALF_H

#include <stdint.h>

/** IEEE half / bfloat16 conversions, round to nearest even. */
uint16_t ifd_f32_to_f16(float f);
float ifd_f16_to_f32(uint16_t h);
uint16_t ifd_f32_to_bf16(float f);
float ifd_bf16_to_f32(uint16_t h);

#endif
