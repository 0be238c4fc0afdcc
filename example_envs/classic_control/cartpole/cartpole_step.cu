// CartPole step kernel (gymnasium CartPole-v1), one thread per env on a flat grid.
//
// Mirrors example_envs/classic_control/cartpole/cartpole.py. Constants come from the prelude
// rendered from cartpole/constants.py by ClassicControlCartPoleEnv.cuda_constants(): a float64
// constant kName arrives as three floats kNameHi/Mid/Lo whose double sum is exactly the Python
// value (base.py: split_double); ints and flags arrive as ints.

#include "../classic_control.cuh"  // CC_DOUBLE, ClassicControlEndStep, ClassicControlFlatStep

constexpr double kGravity = CC_DOUBLE(kGravity);
constexpr double kMassPole = CC_DOUBLE(kMassPole);
constexpr double kTotalMass = CC_DOUBLE(kTotalMass);
constexpr double kLength = CC_DOUBLE(kLength);
constexpr double kPoleMassLength = CC_DOUBLE(kPoleMassLength);
constexpr double kForceMag = CC_DOUBLE(kForceMag);
constexpr double kTau = CC_DOUBLE(kTau);
constexpr double kThetaThreshold = CC_DOUBLE(kThetaThreshold);
constexpr double kXThreshold = CC_DOUBLE(kXThreshold);

// Mirrors cartpole.py: cartpole_transition (one env). Reads state[0..3] before writing
// next_state (they may alias); returns gymnasium's `terminated`.
__host__ __device__ inline bool CartPoleTransition(const float* state, int action,
                                                   float* next_state, float* obs,
                                                   float* reward) {
  double x = state[0];
  double x_dot = state[1];
  double theta = state[2];
  double theta_dot = state[3];
  const double force = action == 1 ? kForceMag : -kForceMag;
  const double costheta = cos(theta);
  const double sintheta = sin(theta);
  const double temp =
      (force + kPoleMassLength * (theta_dot * theta_dot) * sintheta) / kTotalMass;
  const double thetaacc = (kGravity * sintheta - costheta * temp) /
                          (kLength * (4.0 / 3.0 - kMassPole * (costheta * costheta) / kTotalMass));
  const double xacc = temp - kPoleMassLength * thetaacc * costheta / kTotalMass;
  if (kKinematicsIntegrator == 0) {  // "euler"
    x = x + kTau * x_dot;
    x_dot = x_dot + kTau * xacc;
    theta = theta + kTau * theta_dot;
    theta_dot = theta_dot + kTau * thetaacc;
  } else {  // "semi-implicit euler"
    x_dot = x_dot + kTau * xacc;
    x = x + kTau * x_dot;
    theta_dot = theta_dot + kTau * thetaacc;
    theta = theta + kTau * theta_dot;
  }
  const double ns[kStateDim] = {x, x_dot, theta, theta_dot};
  for (int i = 0; i < kStateDim; ++i) {
    next_state[i] = static_cast<float>(ns[i]);
    obs[i] = static_cast<float>(ns[i]);
  }
  const bool terminated =
      x < -kXThreshold || x > kXThreshold || theta < -kThetaThreshold || theta > kThetaThreshold;
  if (kSuttonBartoReward) {
    *reward = terminated ? -1.0f : 0.0f;
  } else {
    *reward = 1.0f;
  }
  return terminated;
}

// state (E, 1, 4), observations (E, 1, 4), sampled_actions (E, 1, 1), rewards (E, 1),
// _done_, _truncated_, _timestep_ (E,). Flat grid (classic_control.cuh).
extern "C" __global__ void CudaClassicControlCartPoleEnvStep(
    float* state_arr, float* observations_arr, const int* sampled_actions_arr, float* rewards_arr,
    int* done_arr, int* truncated_arr, int* timestep_arr, const int episode_length) {
  ClassicControlFlatStep<int, CartPoleTransition>(
      state_arr, observations_arr, sampled_actions_arr, rewards_arr, done_arr, truncated_arr,
      timestep_arr, episode_length);
}

// Start-state hook (fresh_start_states): a gymnasium initial state per env and episode.
__device__ void ClassicControlCartPoleEnvStartState(WkStartKey start, float* state_arr, float* observations_arr) {
  ClassicControlStartState<ClassicControlObserveState>(start, state_arr, observations_arr);
}
