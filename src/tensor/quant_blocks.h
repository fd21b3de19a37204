// The standard ggml block layouts of the quantized GGUF tensor types (byte-for-byte what llama.cpp reads and
// writes), plus the small helpers that decode their packed fields. Scales are f16 bit patterns
// (tensor/float16.h), MXFP4's an E8M0 exponent byte (E8M0Half). Plain structs; a row of a quantized tensor is
// an array of blocks.
#pragma once

#include <bit>
#include <cstdint>

namespace lockstep {

inline constexpr int kQ8_0Block = 32;
inline constexpr int kQ4_0Block = 32;
inline constexpr int kQ5Block = 32;      // Q5_0, Q5_1
inline constexpr int kSuperBlock = 256;  // K-quants, IQ4_XS
inline constexpr int kIQ4Block = 32;     // IQ4_NL
inline constexpr int kMXFP4Block = 32;

// The 16 values of IQ4_NL / IQ4_XS's non-linear 4-bit quants (ggml's kvalues_iq4nl): value = scale *
// kIQ4Values[index].
inline constexpr int8_t kIQ4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};

// The 16 values of MXFP4's 4-bit quants (ggml's kvalues_mxfp4): the E2M1 floats (0, 0.5, 1, 1.5, 2, 3, 4, 6
// and their negatives) doubled, so that they are integers; the block scale is halved to match (E8M0Half).
inline constexpr int8_t kMXFP4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// An E8M0 scale byte e (2^(e - 127)) halved, as ggml's ggml_e8m0_to_fp32_half: 2^(e - 128), exact in f32 for
// every e (e < 2: the subnormals 2^-128 and 2^-127; e = 255 is 2^127, not NaN).
inline float E8M0Half(uint8_t e) {
  return std::bit_cast<float>(e >= 2 ? static_cast<uint32_t>(e - 1) << 23 : uint32_t{0x00200000} << e);
}

// Q8_0: value[i] = d * qs[i].
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[32];
};
static_assert(sizeof(BlockQ8_0) == 34);

// Q4_0: qs[j] low nibble = element j, high nibble = element j + 16; value = d * (nibble - 8).
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ4_0) == 18);

// Q5_0: Q4_0 with a fifth bit per quant: element j (j < 16) = low nibble of qs[j] | bit j of qh << 4, element
// j + 16 = high nibble of qs[j] | bit j + 16 of qh << 4 (qh a little-endian u32; see Q5Quant);
// value = d * (quant - 16).
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_0) == 22);

// Q5_1: quants as Q5_0's; value = d * quant + m.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_1) == 24);

// IQ4_NL: qs[j] low nibble = index of element j, high nibble = of element j + 16; value = d *
// kIQ4Values[index].
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[16];
};
static_assert(sizeof(BlockIQ4_NL) == 18);

// MXFP4: qs as IQ4_NL's (low nibble: index of element j, high nibble: of j + 16); value = E8M0Half(e) *
// kMXFP4Values[index].
struct BlockMXFP4 {
  uint8_t e;
  uint8_t qs[16];
};
static_assert(sizeof(BlockMXFP4) == 17);

// IQ4_XS: 8 sub-blocks of 32 elements, each laid out as an IQ4_NL block's quants at qs + 16 * j, with a 6-bit
// scale ls[j] (IQ4XSScale); value = d * (ls[j] - 32) * kIQ4Values[index].
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;    // bits 2j..2j+1: ls[j]'s bits 4-5
  uint8_t scales_l[4];  // nibble j % 2 of byte j / 2: ls[j]'s bits 0-3
  uint8_t qs[128];
};
static_assert(sizeof(BlockIQ4_XS) == 136);

// Q4_K: 8 sub-blocks of 32 elements, each with a 6-bit scale sc[j] and 6-bit min m[j] packed in `scales`
// (see DecodeQ4KScaleMin). value = d * sc[j] * q - dmin * m[j], q a 4-bit quant. qs[32c + l] holds element
// 64c + l in its low nibble (sub-block 2c) and element 64c + 32 + l in its high nibble (sub-block 2c + 1).
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[128];
};
static_assert(sizeof(BlockQ4_K) == 144);

// Q5_K: Q4_K with a fifth bit per quant. d, dmin and the 6-bit scales and mins as Q4_K's (DecodeQ4KScaleMin);
// value = d * sc[j] * q - dmin * m[j], q in [0, 31]: element 64c + l (l < 32, sub-block 2c) = low nibble of
// qs[32c + l] | bit 2c of qh[l] << 4; element 64c + 32 + l (sub-block 2c + 1) = high nibble of qs[32c + l] |
// bit 2c + 1 of qh[l] << 4 (see Q5KQuant).
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t qs[128];
};
static_assert(sizeof(BlockQ5_K) == 176);

// Q6_K: 16 sub-blocks of 16 elements with int8 scales; value = d * scales[e / 16] * (q - 32), q 6 bits:
// in each half of 128 elements (ql += 64, qh += 32 per half), for l in [0, 32): element l = ql[l] low nibble
// + qh[l] bits 0-1; l + 32 = ql[l + 32] low + qh bits 2-3; l + 64 = ql[l] high + qh bits 4-5;
// l + 96 = ql[l + 32] high + qh bits 6-7 (the qh bits are the quant's bits 4-5).
struct BlockQ6_K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210);

// Q2_K: 16 sub-blocks of 16 elements; scales[j] low nibble = scale sc, high nibble = min m; value = d * sc *
// q - dmin * m, q in [0, 3] at bits 2k..2k+1 of qs[32n + l] for element 128n + 32k + l (Q2KQuant; Q3_K's low
// bits' order).
struct BlockQ2_K {
  uint8_t scales[16];
  uint8_t qs[64];
  uint16_t d;
  uint16_t dmin;
};
static_assert(sizeof(BlockQ2_K) == 84);

// The quant (0..3) of element e in [0, 256) of a Q2_K block's qs.
inline int Q2KQuant(const uint8_t qs[64], int e) {
  return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}

// Q3_K: 16 sub-blocks of 16 elements with 6-bit scales (Q3KScale); value = d * (scale - 32) * q, q in [-4, 3]
// (Q3KQuant): element 128n + 32j + l (n < 2, j < 4, l < 32) has its low 2 bits at bits 2j..2j+1 of
// qs[32n + l] and its third bit at bit 4n + j of hmask[l]; the quant is those 3 bits less 4.
struct BlockQ3_K {
  uint8_t hmask[32];
  uint8_t qs[64];
  uint8_t scales[12];
  uint16_t d;
};
static_assert(sizeof(BlockQ3_K) == 110);

// Scale and min (6 bits each) of Q4_K sub-block j in [0, 8).
inline void DecodeQ4KScaleMin(const uint8_t* scales, int j, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((scales[j + 4] & 0xf) | ((scales[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

// Inverse of DecodeQ4KScaleMin for all 8 sub-blocks (sc, m each < 64).
inline void EncodeQ4KScaleMin(const uint8_t sc[8], const uint8_t m[8], uint8_t scales[12]) {
  for (int j = 0; j < 4; ++j) {
    scales[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    scales[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    scales[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xf) | ((m[j + 4] & 0xf) << 4));
  }
}

// The 5-bit quant (0..31) of element e in [0, 256) of a Q5_K block.
inline int Q5KQuant(const BlockQ5_K& b, int e) {
  const int j = e / 32, l = e % 32;  // sub-block j: nibble j % 2 of qs[32 * (j / 2) + l], bit j of qh[l]
  const int nibble = (b.qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0xf;
  return nibble | (((b.qh[l] >> j) & 1) << 4);
}

// The 5-bit quant (0..31) of element e in [0, 32) of a Q5_0 / Q5_1 block (its qh and qs).
inline int Q5Quant(const uint8_t qh[4], const uint8_t qs[16], int e) {
  const int nibble = (qs[e % 16] >> (4 * (e / 16))) & 0xf;
  return nibble | (((qh[e / 8] >> (e % 8)) & 1) << 4);
}

// Sub-block j's signed scale ls[j] - 32 (-32..31) of an IQ4_XS block.
inline int IQ4XSScale(const BlockIQ4_XS& b, int j) {
  const int ls = ((b.scales_l[j / 2] >> (4 * (j % 2))) & 0xf) | (((b.scales_h >> (2 * j)) & 3) << 4);
  return ls - 32;
}

// The table index (0..15) of element e in [0, 32) of an IQ4_NL or MXFP4 block's (or IQ4_XS sub-block's) 16
// qs bytes.
inline int IQ4Index(const uint8_t qs[16], int e) { return (qs[e % 16] >> (4 * (e / 16))) & 0xf; }

// Sub-block j's signed scale (-32..31) of a Q3_K block (j < 16): low 4 bits from nibble j / 8 of scales[j %
// 8], high 2 bits from bits 2 (j / 4)..+1 of scales[8 + j % 4], less 32.
inline int Q3KScale(const uint8_t scales[12], int j) {
  const int low = (scales[j % 8] >> (4 * (j / 8))) & 0xf;
  const int high = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// The quant (-4..3) of element e in [0, 256) of a Q3_K block.
inline int Q3KQuant(const BlockQ3_K& b, int e) {
  const int n = e / 128, j = (e % 128) / 32, l = e % 32;
  return Q2KQuant(b.qs, e) - (((b.hmask[l] >> (4 * n + j)) & 1) ? 0 : 4);
}

// The 6-bit quant (0..63) of element e in [0, 256) of a Q6_K block.
inline int Q6KQuant(const BlockQ6_K& b, int e) {
  const int half = e / 128, r = e % 128, quarter = r / 32, l = r % 32;
  const uint8_t* ql = b.ql + 64 * half;
  const uint8_t* qh = b.qh + 32 * half;
  const int low = (quarter & 1) ? ql[l + 32] : ql[l];
  const int nibble = (quarter < 2) ? (low & 0xf) : (low >> 4);
  return nibble | (((qh[l] >> (2 * quarter)) & 3) << 4);
}

}  // namespace lockstep
