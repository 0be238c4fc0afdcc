// Pendulum step kernel (gymnasium Pendulum-v1), one thread per env on a flat grid.
//
// Mirrors example_envs/classic_control/pendulum/pendulum.py: float64 state arithmetic (MulRn,
// AddRn: no FMA), float32 torque arithmetic (gymnasium keeps the torque float32) with the
// round-to-nearest helpers of core/philox.cuh. Constants come from the prelude rendered from
// pendulum/constants.py by ClassicControlPendulumEnv.cuda_constants(): a float64 constant kName
// arrives as three floats kNameHi/Mid/Lo whose double sum is exactly the Python value
// (base.py: split_double).

#include "../classic_control.cuh"  // CC_DOUBLE, ClassicControlEndStep, ClassicControlFlatStep

constexpr double kMaxSpeed = CC_DOUBLE(kMaxSpeed);
constexpr double kMaxTorque = CC_DOUBLE(kMaxTorque);
constexpr double kDt = CC_DOUBLE(kDt);
constexpr double kGravityCoef = CC_DOUBLE(kGravityCoef);  // 3 g / (2 l)
constexpr double kTorqueCoef = CC_DOUBLE(kTorqueCoef);    // 3 / (m l^2)
constexpr double kThetaDotCost = CC_DOUBLE(kThetaDotCost);
constexpr double kTorqueCost = CC_DOUBLE(kTorqueCost);
constexpr double kPi = 3.141592653589793;  // numpy.pi

// float64 multiply / add, each rounded like NumPy's: nvcc would fuse them into FMAs, which moved
// about 1e-4 of the float32 rewards by one ulp on an H100.
__host__ __device__ __forceinline__ double MulRn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

__host__ __device__ __forceinline__ double AddRn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

// Mirrors pendulum.py: angle_normalize, ((x + pi) % (2 pi)) - pi with NumPy's floor-mod.
__host__ __device__ inline double AngleNormalize(double x) {
  const double a = x + kPi;
  const double b = 2 * kPi;
  double mod = fmod(a, b);
  if (mod != 0.0) {
    if ((b < 0) != (mod < 0)) mod += b;
  } else {
    mod = copysign(0.0, b);
  }
  return mod - kPi;
}

// Mirrors pendulum.py: pendulum_transition (one env). Reads state before writing next_state
// (they may alias). Float64 squares are products here; gymnasium's scalar `x**2` is C pow (at
// most one float64 ulp apart, see base.py: scalar_pow2). Never terminates.
__host__ __device__ inline bool PendulumTransition(const float* state, float action,
                                                   float* next_state, float* obs, float* reward) {
  const double th = state[0];
  const double thdot = state[1];
  const float max_torque = static_cast<float>(kMaxTorque);
  const float u = action < -max_torque ? -max_torque : (action > max_torque ? max_torque : action);
  const double an = AngleNormalize(th);
  const float torque_cost = wkMulRn(static_cast<float>(kTorqueCost), wkMulRn(u, u));
  const double costs = AddRn(AddRn(MulRn(an, an), MulRn(kThetaDotCost, MulRn(thdot, thdot))),
                             static_cast<double>(torque_cost));
  const float torque_term = wkMulRn(static_cast<float>(kTorqueCoef), u);
  double newthdot =
      AddRn(thdot, MulRn(AddRn(MulRn(kGravityCoef, sin(th)), static_cast<double>(torque_term)), kDt));
  newthdot = newthdot < -kMaxSpeed ? -kMaxSpeed : (newthdot > kMaxSpeed ? kMaxSpeed : newthdot);
  const double newth = AddRn(th, MulRn(newthdot, kDt));
  next_state[0] = static_cast<float>(newth);
  next_state[1] = static_cast<float>(newthdot);
  obs[0] = static_cast<float>(cos(newth));
  obs[1] = static_cast<float>(sin(newth));
  obs[2] = static_cast<float>(newthdot);
  *reward = static_cast<float>(-costs);
  return false;
}

// state (E, 1, 2), observations (E, 1, 3), sampled_actions (E, 1, 1) float, rewards (E, 1),
// _done_ (E,): 1 at the time limit; _truncated_, _timestep_ (E,). Flat grid (classic_control.cuh).
extern "C" __global__ void CudaClassicControlPendulumEnvStep(
    float* state_arr, float* observations_arr, const float* sampled_actions_arr,
    float* rewards_arr, int* done_arr, int* truncated_arr, int* timestep_arr,
    const int episode_length) {
  ClassicControlFlatStep<float, PendulumTransition>(
      state_arr, observations_arr, sampled_actions_arr, rewards_arr, done_arr, truncated_arr,
      timestep_arr, episode_length);
}

// Mirrors pendulum.py: pendulum_observe (gymnasium's _get_obs), in double.
__host__ __device__ inline void PendulumObserve(const float* state, float* obs) {
  const double th = state[0];
  obs[0] = static_cast<float>(cos(th));
  obs[1] = static_cast<float>(sin(th));
  obs[2] = state[1];
}

// Start-state hook (fresh_start_states): a gymnasium initial state per env and episode.
__device__ void ClassicControlPendulumEnvStartState(WkStartKey start, float* state_arr, float* observations_arr) {
  ClassicControlStartState<PendulumObserve>(start, state_arr, observations_arr);
}
