//===- kernels.h - Kernels pasted into every mlbridge-aot model -*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The loop kernels of generated models. mlbridge-aot pastes this file into
/// each generated source inside an anonymous namespace, so a binary may link
/// any number of models; it depends on the C++17 standard library only.
/// Every kernel is force-inlined into the model's step functions, which are
/// compiled once per instruction set (generic, AVX2+FMA) so that the same
/// loops vectorise for the machine the compiler runs on. Shapes are template
/// arguments or constants: the C++ compiler sees fixed trip counts. In a
/// model with many nodes (MLBRIDGE_AOT_OUTLINE_KERNELS), the kernels whose
/// sizes are run-time arguments (MLBRIDGE_AOT_SHARED) are instead one
/// out-of-line function per instantiation, shared by all the nodes, for the
/// baseline instruction set: compile time stays linear in the model.
///
//===----------------------------------------------------------------------===//

#if defined(__GNUC__) || defined(__clang__)
#define MLBRIDGE_AOT_INLINE inline __attribute__((always_inline))
#define MLBRIDGE_AOT_RESTRICT __restrict__
#else
#define MLBRIDGE_AOT_INLINE inline
#define MLBRIDGE_AOT_RESTRICT
#endif
#if defined(MLBRIDGE_AOT_OUTLINE_KERNELS) &&                                   \
    (defined(__GNUC__) || defined(__clang__))
#define MLBRIDGE_AOT_SHARED __attribute__((noinline))
#else
#define MLBRIDGE_AOT_SHARED MLBRIDGE_AOT_INLINE
#endif

namespace kernels {

using I64 = std::int64_t;

/// NB accumulators of a dense layer's column block, kept in vector registers
/// (GCC/Clang vector extensions; plain arrays elsewhere). NB is a multiple
/// of 8.
template <int NB> struct BlockAccumulator {
#if defined(__GNUC__) || defined(__clang__)
  typedef float Vec __attribute__((vector_size(32)));
  static constexpr int Lanes = 8;
#else
  typedef float Vec;
  static constexpr int Lanes = 1;
#endif
  Vec Acc[NB / Lanes];

  /// Starts from \p Bias[0..NB) (or zeros).
  MLBRIDGE_AOT_INLINE void init(const float *Bias) {
    for (int J = 0; J < NB / Lanes; ++J)
      std::memcpy(&Acc[J], Bias ? Bias + J * Lanes : Zeros, sizeof(Vec));
  }
  /// Acc += X * W[0..NB), W aligned to 32 bytes.
  MLBRIDGE_AOT_INLINE void add(float X, const float *MLBRIDGE_AOT_RESTRICT W) {
    for (int J = 0; J < NB / Lanes; ++J)
      Acc[J] += X * *reinterpret_cast<const Vec *>(W + J * Lanes);
  }
  /// Writes the first \p Count sums to \p Y, through a ReLU if asked.
  MLBRIDGE_AOT_INLINE void store(float *MLBRIDGE_AOT_RESTRICT Y, int Count,
                                 bool Relu) const {
    float Out[NB];
    std::memcpy(Out, Acc, sizeof(Out));
    for (int J = 0; J < Count; ++J)
      Y[J] = Relu ? (Out[J] > 0.0f ? Out[J] : 0.0f) : Out[J];
  }
  static constexpr float Zeros[8] = {};
};

/// Dense layer with constant weights packed in column blocks of NB outputs:
/// Y[M,N] = act(X[M,K] * W + Bias). Packed[b][k][j] = W[k][b*NB+j], zero
/// padded, 64-byte aligned; Bias (may be null) is padded to a multiple of
/// NB. NB accumulators stay in registers while the packed weights stream
/// through once. With SkipZeros (an input that follows a ReLU), the rows of
/// weights whose input is zero are skipped: the non-zero inputs are listed
/// first, without branches. That sums the same terms in the same order, so
/// the result is the same when the weights are finite (mlbridge-aot checks
/// that before asking for it).
template <int M, int K, int N, int NB, bool Relu, bool SkipZeros>
MLBRIDGE_AOT_INLINE void denseBlocked(const float *MLBRIDGE_AOT_RESTRICT X,
                                      const float *MLBRIDGE_AOT_RESTRICT Packed,
                                      const float *MLBRIDGE_AOT_RESTRICT Bias,
                                      float *MLBRIDGE_AOT_RESTRICT Y) {
  constexpr int Blocks = (N + NB - 1) / NB;
  for (int Row = 0; Row < M; ++Row) {
    const float *XRow = X + I64(Row) * K;
    float *YRow = Y + I64(Row) * N;
    int Rows = K;
    I64 Offset[SkipZeros ? K : 1];
    float Value[SkipZeros ? K : 1];
    if constexpr (SkipZeros) {
      Rows = 0;
      for (int Kk = 0; Kk < K; ++Kk) {
        Offset[Rows] = I64(Kk) * NB;
        Value[Rows] = XRow[Kk];
        Rows += XRow[Kk] != 0.0f;
      }
    }
    for (int B = 0; B < Blocks; ++B) {
      BlockAccumulator<NB> Acc;
      Acc.init(Bias ? Bias + B * NB : nullptr);
      const float *W = Packed + I64(B) * K * NB;
      for (int I = 0; I < Rows; ++I) {
        if constexpr (SkipZeros)
          Acc.add(Value[I], W + Offset[I]);
        else
          Acc.add(XRow[I], W + I64(I) * NB);
      }
      Acc.store(YRow + B * NB, B == Blocks - 1 ? N - B * NB : NB, Relu);
    }
  }
}

/// Dense layer with few outputs: one dot product per output over the rows of
/// WT[N][K] (the transposed weights), with L partial sums to keep the vector
/// units busy. Bias may be null.
template <int M, int K, int N, int L, bool Relu>
MLBRIDGE_AOT_INLINE void denseDot(const float *MLBRIDGE_AOT_RESTRICT X,
                                  const float *MLBRIDGE_AOT_RESTRICT WT,
                                  const float *MLBRIDGE_AOT_RESTRICT Bias,
                                  float *MLBRIDGE_AOT_RESTRICT Y) {
  constexpr int Main = K / L * L;
  for (int Row = 0; Row < M; ++Row) {
    const float *XRow = X + I64(Row) * K;
    for (int Col = 0; Col < N; ++Col) {
      const float *W = WT + I64(Col) * K;
      float Acc[L] = {};
      for (int Kk = 0; Kk < Main; Kk += L)
        for (int J = 0; J < L; ++J)
          Acc[J] += XRow[Kk + J] * W[Kk + J];
      float Sum = 0.0f;
      for (int J = 0; J < L; ++J)
        Sum += Acc[J];
      for (int Kk = Main; Kk < K; ++Kk)
        Sum += XRow[Kk] * W[Kk];
      if (Bias)
        Sum += Bias[Col];
      Y[I64(Row) * N + Col] = Relu ? (Sum > 0.0f ? Sum : 0.0f) : Sum;
    }
  }
}

/// General matrix product of runtime operands: Y[M,N] = X[M,K] * W[K,N].
template <class T, int M, int K, int N>
MLBRIDGE_AOT_INLINE void matmul(const T *MLBRIDGE_AOT_RESTRICT X,
                                const T *MLBRIDGE_AOT_RESTRICT W,
                                T *MLBRIDGE_AOT_RESTRICT Y) {
  for (int Row = 0; Row < M; ++Row) {
    T *YRow = Y + I64(Row) * N;
    for (int J = 0; J < N; ++J)
      YRow[J] = T(0);
    for (int Kk = 0; Kk < K; ++Kk) {
      const T Xk = X[I64(Row) * K + Kk];
      const T *WRow = W + I64(Kk) * N;
      for (int J = 0; J < N; ++J)
        YRow[J] += Xk * WRow[J];
    }
  }
}

/// Y[i] = F(X[i]) for I in [0, Count); X and Y may be the same buffer.
template <class In, class Out, class F>
MLBRIDGE_AOT_SHARED void map(const In *X, Out *Y, I64 Count, F Fn) {
  for (I64 I = 0; I < Count; ++I)
    Y[I] = Fn(X[I]);
}

/// Y[i] = F(A[i * SA], B[i * SB]): same-shape (strides 1) or scalar (0)
/// operands of a binary operator. Y may be A (in-place epilogues).
template <class T, class Out, class F>
MLBRIDGE_AOT_SHARED void zip(const T *A, I64 SA, const T *B, I64 SB, Out *Y,
                             I64 Count, F Fn) {
  if (SA == 1 && SB == 1) {
    for (I64 I = 0; I < Count; ++I)
      Y[I] = Fn(A[I], B[I]);
  } else if (SA == 1) {
    const T BV = B[0];
    for (I64 I = 0; I < Count; ++I)
      Y[I] = Fn(A[I], BV);
  } else {
    const T AV = A[0];
    for (I64 I = 0; I < Count; ++I)
      Y[I] = Fn(AV, B[I]);
  }
}

/// Binary operator with numpy broadcasting over R dimensions: Shape is the
/// output shape, SA and SB the operands' element strides (0 on broadcast
/// dimensions). The innermost dimension runs as a zip().
template <class T, class Out, int R, class F>
MLBRIDGE_AOT_SHARED void zipBroadcast(const T *A, const I64 *SA, const T *B,
                                      const I64 *SB, Out *Y, const I64 *Shape,
                                      F Fn) {
  I64 Index[R] = {};
  I64 Outer = 1;
  for (int D = 0; D + 1 < R; ++D)
    Outer *= Shape[D];
  const I64 Inner = Shape[R - 1];
  for (I64 O = 0; O < Outer; ++O) {
    I64 OffA = 0, OffB = 0;
    for (int D = 0; D + 1 < R; ++D) {
      OffA += Index[D] * SA[D];
      OffB += Index[D] * SB[D];
    }
    const T *RowA = A + OffA;
    const T *RowB = B + OffB;
    Out *RowY = Y + O * Inner;
    const I64 IA = SA[R - 1], IB = SB[R - 1];
    for (I64 I = 0; I < Inner; ++I)
      RowY[I] = Fn(RowA[I * IA], RowB[I * IB]);
    for (int D = R - 2; D >= 0; --D) {
      if (++Index[D] < Shape[D])
        break;
      Index[D] = 0;
    }
  }
}

/// Copies Rows blocks of Count elements from X (rows SX apart) to Y (rows SY
/// apart): Concat, and copies of results.
template <class T>
MLBRIDGE_AOT_SHARED void copyRows(const T *MLBRIDGE_AOT_RESTRICT X, I64 SX,
                                  T *MLBRIDGE_AOT_RESTRICT Y, I64 SY, I64 Rows,
                                  I64 Count) {
  for (I64 Row = 0; Row < Rows; ++Row)
    for (I64 I = 0; I < Count; ++I)
      Y[Row * SY + I] = X[Row * SX + I];
}

/// Transpose over R dimensions: Y (of shape Shape, row-major) takes element
/// sum(Index[d] * Strides[d]) of X.
template <class T, int R>
MLBRIDGE_AOT_SHARED void
gatherStrided(const T *MLBRIDGE_AOT_RESTRICT X, const I64 *Strides,
              T *MLBRIDGE_AOT_RESTRICT Y, const I64 *Shape) {
  I64 Index[R] = {};
  I64 Total = 1;
  for (int D = 0; D < R; ++D)
    Total *= Shape[D];
  for (I64 O = 0; O < Total; ++O) {
    I64 Off = 0;
    for (int D = 0; D < R; ++D)
      Off += Index[D] * Strides[D];
    Y[O] = X[Off];
    for (int D = R - 1; D >= 0; --D) {
      if (++Index[D] < Shape[D])
        break;
      Index[D] = 0;
    }
  }
}

/// Softmax (or LogSoftmax) along the middle axis of X[Outer][N][Inner].
template <int Outer, int N, int Inner, bool Log>
MLBRIDGE_AOT_INLINE void softmax(const float *MLBRIDGE_AOT_RESTRICT X,
                                 float *MLBRIDGE_AOT_RESTRICT Y) {
  for (int O = 0; O < Outer; ++O) {
    for (int In = 0; In < Inner; ++In) {
      const float *XS = X + I64(O) * N * Inner + In;
      float *YS = Y + I64(O) * N * Inner + In;
      float Max = XS[0];
      for (int I = 1; I < N; ++I)
        Max = XS[I64(I) * Inner] > Max ? XS[I64(I) * Inner] : Max;
      float Sum = 0.0f;
      for (int I = 0; I < N; ++I) {
        const float E = std::exp(XS[I64(I) * Inner] - Max);
        if (!Log)
          YS[I64(I) * Inner] = E;
        Sum += E;
      }
      if (Log) {
        const float LogSum = std::log(Sum);
        for (int I = 0; I < N; ++I)
          YS[I64(I) * Inner] = XS[I64(I) * Inner] - Max - LogSum;
      } else {
        const float Inv = 1.0f / Sum;
        for (int I = 0; I < N; ++I)
          YS[I64(I) * Inner] *= Inv;
      }
    }
  }
}

/// Gather along the middle axis of Data[Outer][N][Inner] with Count runtime
/// indices (negative ones count from the end). Returns false, writing
/// nothing more, on an index outside [-N, N).
template <class T, int Outer, int N, int Inner, int Count>
MLBRIDGE_AOT_INLINE bool gather(const T *MLBRIDGE_AOT_RESTRICT Data,
                                const I64 *MLBRIDGE_AOT_RESTRICT Indices,
                                T *MLBRIDGE_AOT_RESTRICT Y) {
  for (int C = 0; C < Count; ++C)
    if (Indices[C] < -I64(N) || Indices[C] >= I64(N))
      return false;
  for (int O = 0; O < Outer; ++O)
    for (int C = 0; C < Count; ++C) {
      const I64 Index = Indices[C] < 0 ? Indices[C] + N : Indices[C];
      const T *Src = Data + (I64(O) * N + Index) * Inner;
      T *Dst = Y + (I64(O) * Count + C) * Inner;
      for (int I = 0; I < Inner; ++I)
        Dst[I] = Src[I];
    }
  return true;
}

/// Sum (or mean, Scale = 1/count) over the axes of X (shape Shape, R dims)
/// whose output stride OutStrides[d] is 0; Y has OutCount elements.
template <class T, int R>
MLBRIDGE_AOT_SHARED void reduceSum(const T *MLBRIDGE_AOT_RESTRICT X,
                                   const I64 *Shape, const I64 *OutStrides,
                                   T *MLBRIDGE_AOT_RESTRICT Y, I64 OutCount,
                                   bool Mean, I64 Divisor) {
  for (I64 I = 0; I < OutCount; ++I)
    Y[I] = T(0);
  I64 Index[R] = {};
  I64 Total = 1;
  for (int D = 0; D < R; ++D)
    Total *= Shape[D];
  for (I64 In = 0; In < Total; ++In) {
    I64 Off = 0;
    for (int D = 0; D < R; ++D)
      Off += Index[D] * OutStrides[D];
    Y[Off] += X[In];
    for (int D = R - 1; D >= 0; --D) {
      if (++Index[D] < Shape[D])
        break;
      Index[D] = 0;
    }
  }
  if (Mean)
    for (I64 I = 0; I < OutCount; ++I)
      Y[I] /= T(Divisor);
}

/// ArgMax along the middle axis of X[Outer][N][Inner]; ties go to the first
/// (or, with Last, the last) index.
template <class T, int Outer, int N, int Inner, bool Last>
MLBRIDGE_AOT_INLINE void argmax(const T *MLBRIDGE_AOT_RESTRICT X,
                                I64 *MLBRIDGE_AOT_RESTRICT Y) {
  for (int O = 0; O < Outer; ++O)
    for (int In = 0; In < Inner; ++In) {
      const T *XS = X + I64(O) * N * Inner + In;
      I64 Best = 0;
      for (int I = 1; I < N; ++I) {
        const T V = XS[I64(I) * Inner], B = XS[Best * Inner];
        if (Last ? V >= B : V > B)
          Best = I;
      }
      Y[I64(O) * Inner + In] = Best;
    }
}

/// float -> int64 as ONNX Runtime does on x86 (truncation), without C++'s
/// undefined behaviour: NaN and out-of-range values give INT64_MIN.
[[maybe_unused]] MLBRIDGE_AOT_INLINE I64 floatToInt64(float V) {
  if (V >= -9223372036854775808.0f && V < 9223372036854775808.0f)
    return I64(V);
  return std::numeric_limits<I64>::min();
}

/// Elementwise functors (binary: Add, Sub, Mul, Div, DivInt; unary: the rest).
struct Add {
  template <class T> MLBRIDGE_AOT_INLINE T operator()(T A, T B) const {
    return A + B;
  }
};
struct Sub {
  template <class T> MLBRIDGE_AOT_INLINE T operator()(T A, T B) const {
    return A - B;
  }
};
struct Mul {
  template <class T> MLBRIDGE_AOT_INLINE T operator()(T A, T B) const {
    return A * B;
  }
};
struct Div {
  MLBRIDGE_AOT_INLINE float operator()(float A, float B) const { return A / B; }
};
/// Integer division truncating toward zero; a zero divisor (or INT64_MIN /
/// -1, which overflows) gives 0 and sets *Bad.
struct DivInt {
  bool *Bad;
  MLBRIDGE_AOT_INLINE I64 operator()(I64 A, I64 B) const {
    if (B == 0 || (B == -1 && A == std::numeric_limits<I64>::min())) {
      *Bad = true;
      return 0;
    }
    return A / B;
  }
};
struct Relu {
  template <class T> MLBRIDGE_AOT_INLINE T operator()(T X) const {
    return X > T(0) ? X : T(0);
  }
};
struct LeakyRelu {
  float Alpha;
  MLBRIDGE_AOT_INLINE float operator()(float X) const {
    return X >= 0.0f ? X : X * Alpha;
  }
};
struct Abs {
  template <class T> MLBRIDGE_AOT_INLINE T operator()(T X) const {
    return X < T(0) ? T(0) - X : X;
  }
};
struct Neg {
  template <class T> MLBRIDGE_AOT_INLINE T operator()(T X) const {
    return T(0) - X;
  }
};
struct Sign {
  template <class T> MLBRIDGE_AOT_INLINE T operator()(T X) const {
    return X > T(0) ? T(1) : (X < T(0) ? T(-1) : X);
  }
};
struct Exp {
  MLBRIDGE_AOT_INLINE float operator()(float X) const { return std::exp(X); }
};
struct Log {
  MLBRIDGE_AOT_INLINE float operator()(float X) const { return std::log(X); }
};
struct Sqrt {
  MLBRIDGE_AOT_INLINE float operator()(float X) const { return std::sqrt(X); }
};
struct Tanh {
  MLBRIDGE_AOT_INLINE float operator()(float X) const { return std::tanh(X); }
};
struct Sigmoid {
  MLBRIDGE_AOT_INLINE float operator()(float X) const {
    return 1.0f / (1.0f + std::exp(-X));
  }
};
template <class T> struct Clip {
  T Lo, Hi;
  MLBRIDGE_AOT_INLINE T operator()(T X) const {
    return X < Lo ? Lo : (X > Hi ? Hi : X);
  }
};
template <class To> struct Cast {
  template <class From> MLBRIDGE_AOT_INLINE To operator()(From X) const {
    if constexpr (std::is_same_v<To, I64> && std::is_same_v<From, float>)
      return floatToInt64(X);
    else
      return To(X);
  }
};
struct Copy {
  template <class T> MLBRIDGE_AOT_INLINE T operator()(T X) const { return X; }
};

} // namespace kernels
