// Acrobot step kernel (gymnasium Acrobot-v1, "book" dynamics), one thread per env on a flat grid.
//
// Mirrors example_envs/classic_control/acrobot/acrobot.py. Constants come from the prelude
// rendered from acrobot/constants.py by ClassicControlAcrobotEnv.cuda_constants(): a float64
// constant kName arrives as three floats kNameHi/Mid/Lo whose double sum is exactly the Python
// value (base.py: split_double); ints arrive as ints.

#include "../classic_control.cuh"  // CC_DOUBLE, ClassicControlEndStep, ClassicControlFlatStep

constexpr double kDt = CC_DOUBLE(kDt);
constexpr double kLinkLength1 = CC_DOUBLE(kLinkLength1);
constexpr double kLinkMass1 = CC_DOUBLE(kLinkMass1);
constexpr double kLinkMass2 = CC_DOUBLE(kLinkMass2);
constexpr double kLinkComPos1 = CC_DOUBLE(kLinkComPos1);
constexpr double kLinkComPos2 = CC_DOUBLE(kLinkComPos2);
constexpr double kLinkMoi = CC_DOUBLE(kLinkMoi);
constexpr double kMaxVel1 = CC_DOUBLE(kMaxVel1);
constexpr double kMaxVel2 = CC_DOUBLE(kMaxVel2);
constexpr double kGravity = CC_DOUBLE(kGravity);
constexpr double kLinkLength1Sq = CC_DOUBLE(kLinkLength1Sq);
constexpr double kLinkComPos1Sq = CC_DOUBLE(kLinkComPos1Sq);
constexpr double kLinkComPos2Sq = CC_DOUBLE(kLinkComPos2Sq);
constexpr double kPi = 3.141592653589793;  // numpy.pi

// Mirrors acrobot.py: acrobot_dsdt. Squares of state terms are products here; gymnasium's scalar
// `x**2` is C pow (at most 1 float64 ulp apart, see base.py: scalar_pow2).
__host__ __device__ inline void AcrobotDsdt(const double s[4], double torque, double ds[4]) {
  const double m1 = kLinkMass1, m2 = kLinkMass2, l1 = kLinkLength1;
  const double lc1 = kLinkComPos1, lc2 = kLinkComPos2, i1 = kLinkMoi, i2 = kLinkMoi;
  const double g = kGravity;
  const double theta1 = s[0], theta2 = s[1], dtheta1 = s[2], dtheta2 = s[3];
  const double d1 =
      m1 * kLinkComPos1Sq + m2 * (kLinkLength1Sq + kLinkComPos2Sq + 2 * l1 * lc2 * cos(theta2)) + i1 + i2;
  const double d2 = m2 * (kLinkComPos2Sq + l1 * lc2 * cos(theta2)) + i2;
  const double phi2 = m2 * lc2 * g * cos(theta1 + theta2 - kPi / 2.0);
  const double phi1 = -m2 * l1 * lc2 * (dtheta2 * dtheta2) * sin(theta2) -
                      2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * sin(theta2) +
                      (m1 * lc1 + m2 * l1) * g * cos(theta1 - kPi / 2) + phi2;
  const double ddtheta2 =
      (torque + d2 / d1 * phi1 - m2 * l1 * lc2 * (dtheta1 * dtheta1) * sin(theta2) - phi2) /
      (m2 * kLinkComPos2Sq + i2 - (d2 * d2) / d1);
  const double ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
  ds[0] = dtheta1;
  ds[1] = dtheta2;
  ds[2] = ddtheta1;
  ds[3] = ddtheta2;
}

// Mirrors acrobot.py: acrobot_rk4 (one RK4 step over [0, dt], constant torque).
__host__ __device__ inline void AcrobotRk4(const double y0[4], double torque, double out[4]) {
  const double dt2 = kDt / 2.0;
  double k1[4], k2[4], k3[4], k4[4], y[4];
  AcrobotDsdt(y0, torque, k1);
  for (int i = 0; i < 4; ++i) y[i] = y0[i] + dt2 * k1[i];
  AcrobotDsdt(y, torque, k2);
  for (int i = 0; i < 4; ++i) y[i] = y0[i] + dt2 * k2[i];
  AcrobotDsdt(y, torque, k3);
  for (int i = 0; i < 4; ++i) y[i] = y0[i] + kDt * k3[i];
  AcrobotDsdt(y, torque, k4);
  for (int i = 0; i < 4; ++i) {
    out[i] = y0[i] + kDt / 6.0 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
  }
}

// Mirrors acrobot.py: wrap_angle (gymnasium's wrap(x, -pi, pi), loops bounded).
__host__ __device__ inline double WrapAngle(double x) {
  const double diff = kPi - (-kPi);
  for (int i = 0; i < kMaxWrapIterations && x > kPi; ++i) x = x - diff;
  for (int i = 0; i < kMaxWrapIterations && x < -kPi; ++i) x = x + diff;
  return x;
}

// np.clip(x, lo, hi) for lo <= hi (NaN passes through, like gymnasium's bound()).
__host__ __device__ __forceinline__ double ClipDouble(double x, double lo, double hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

// Mirrors acrobot.py: acrobot_transition (one env). Reads state before writing next_state
// (they may alias); returns gymnasium's `terminated`.
__host__ __device__ inline bool AcrobotTransition(const float* state, int action,
                                                  float* next_state, float* obs, float* reward) {
  const int a = action < 0 ? 0 : (action >= kNumActions ? kNumActions - 1 : action);
  const double torque = a == 0 ? CC_DOUBLE(kAvailTorque0)
                               : (a == 1 ? CC_DOUBLE(kAvailTorque1) : CC_DOUBLE(kAvailTorque2));
  const double y0[4] = {state[0], state[1], state[2], state[3]};
  double ns[4];
  AcrobotRk4(y0, torque, ns);
  ns[0] = WrapAngle(ns[0]);
  ns[1] = WrapAngle(ns[1]);
  ns[2] = ClipDouble(ns[2], -kMaxVel1, kMaxVel1);
  ns[3] = ClipDouble(ns[3], -kMaxVel2, kMaxVel2);
  const bool terminated = -cos(ns[0]) - cos(ns[1] + ns[0]) > 1.0;
  for (int i = 0; i < kStateDim; ++i) next_state[i] = static_cast<float>(ns[i]);
  obs[0] = static_cast<float>(cos(ns[0]));
  obs[1] = static_cast<float>(sin(ns[0]));
  obs[2] = static_cast<float>(cos(ns[1]));
  obs[3] = static_cast<float>(sin(ns[1]));
  obs[4] = static_cast<float>(ns[2]);
  obs[5] = static_cast<float>(ns[3]);
  *reward = terminated ? 0.0f : -1.0f;
  return terminated;
}

// state (E, 1, 4), observations (E, 1, 6), sampled_actions (E, 1, 1), rewards (E, 1),
// _done_, _truncated_, _timestep_ (E,). Flat grid (classic_control.cuh).
extern "C" __global__ void CudaClassicControlAcrobotEnvStep(
    float* state_arr, float* observations_arr, const int* sampled_actions_arr, float* rewards_arr,
    int* done_arr, int* truncated_arr, int* timestep_arr, const int episode_length) {
  ClassicControlFlatStep<int, AcrobotTransition>(
      state_arr, observations_arr, sampled_actions_arr, rewards_arr, done_arr, truncated_arr,
      timestep_arr, episode_length);
}

// Mirrors acrobot.py: acrobot_observe (gymnasium's _get_ob), in double.
__host__ __device__ inline void AcrobotObserve(const float* state, float* obs) {
  const double t1 = state[0];
  const double t2 = state[1];
  obs[0] = static_cast<float>(cos(t1));
  obs[1] = static_cast<float>(sin(t1));
  obs[2] = static_cast<float>(cos(t2));
  obs[3] = static_cast<float>(sin(t2));
  obs[4] = state[2];
  obs[5] = state[3];
}

// Start-state hook (fresh_start_states): a gymnasium initial state per env and episode.
__device__ void ClassicControlAcrobotEnvStartState(WkStartKey start, float* state_arr, float* observations_arr) {
  ClassicControlStartState<AcrobotObserve>(start, state_arr, observations_arr);
}
