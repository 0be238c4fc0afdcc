// ContinuousMountainCar step kernel (gymnasium MountainCarContinuous-v0), one thread per env on
// a flat grid.
//
// Mirrors example_envs/classic_control/continuous_mountain_car/continuous_mountain_car.py,
// including its float32 arithmetic (gymnasium's float32 state under NumPy 2): float32 products
// and sums use the round-to-nearest helpers of core/philox.cuh (wkMulRn, wkAddRn, wkSubRn) so
// that nvcc cannot fuse them into FMAs. Constants come from the prelude rendered from
// continuous_mountain_car/constants.py: a float64 constant kName arrives as three floats
// kNameHi/Mid/Lo whose double sum is exactly the Python value (base.py: split_double).

#include "../classic_control.cuh"  // CC_DOUBLE, ClassicControlEndStep, ClassicControlFlatStep

constexpr double kMinAction = CC_DOUBLE(kMinAction);
constexpr double kMaxAction = CC_DOUBLE(kMaxAction);
constexpr double kMinPosition = CC_DOUBLE(kMinPosition);
constexpr double kMaxPosition = CC_DOUBLE(kMaxPosition);
constexpr double kMaxSpeed = CC_DOUBLE(kMaxSpeed);
constexpr double kGoalPosition = CC_DOUBLE(kGoalPosition);
constexpr double kGoalVelocity = CC_DOUBLE(kGoalVelocity);
constexpr double kPower = CC_DOUBLE(kPower);
constexpr double kGravity = CC_DOUBLE(kGravity);
constexpr double kGoalReward = CC_DOUBLE(kGoalReward);
constexpr double kActionCost = CC_DOUBLE(kActionCost);

// Mirrors continuous_mountain_car.py: continuous_mountain_car_transition (one env). Reads state
// before writing next_state (they may alias); returns gymnasium's `terminated` (goal reached).
__host__ __device__ inline bool ContinuousMountainCarTransition(const float* state, float a,
                                                                float* next_state, float* obs,
                                                                float* reward) {
  float position = state[0];
  float velocity = state[1];
  const bool clipped_low = static_cast<float>(kMinAction) > a;
  const float force = clipped_low ? static_cast<float>(kMinAction) : a;
  const bool clipped_high = static_cast<float>(kMaxAction) < force;
  const double slope = kGravity * cos(static_cast<double>(wkMulRn(3.0f, position)));
  float dv;
  if (clipped_low || clipped_high) {  // the Python float bound: float64 arithmetic
    const double bound = clipped_low ? kMinAction : kMaxAction;
    dv = static_cast<float>(bound * kPower - slope);
  } else {  // float32 force: float32 arithmetic
    dv = wkSubRn(wkMulRn(a, static_cast<float>(kPower)), static_cast<float>(slope));
  }
  velocity = wkAddRn(velocity, dv);
  const float max_speed = static_cast<float>(kMaxSpeed);
  if (velocity > max_speed) velocity = max_speed;
  if (velocity < -max_speed) velocity = -max_speed;
  position = wkAddRn(position, velocity);
  const float max_position = static_cast<float>(kMaxPosition);
  const float min_position = static_cast<float>(kMinPosition);
  if (position > max_position) position = max_position;
  if (position < min_position) position = min_position;
  if (position == min_position && velocity < 0.0f) velocity = 0.0f;
  const bool terminated = position >= static_cast<float>(kGoalPosition) &&
                          velocity >= static_cast<float>(kGoalVelocity);
  const double a64 = static_cast<double>(a);
  *reward = static_cast<float>((terminated ? kGoalReward : 0.0) - (a64 * a64) * kActionCost);
  next_state[0] = obs[0] = position;
  next_state[1] = obs[1] = velocity;
  return terminated;
}

// state (E, 1, 2), observations (E, 1, 2), sampled_actions (E, 1, 1) float, rewards (E, 1),
// _done_ (E,): 2 = goal reached (also at the time limit), 1 = time limit; _truncated_,
// _timestep_ (E,). Flat grid (classic_control.cuh).
extern "C" __global__ void CudaClassicControlContinuousMountainCarEnvStep(
    float* state_arr, float* observations_arr, const float* sampled_actions_arr,
    float* rewards_arr, int* done_arr, int* truncated_arr, int* timestep_arr,
    const int episode_length) {
  ClassicControlFlatStep<float, ContinuousMountainCarTransition>(
      state_arr, observations_arr, sampled_actions_arr, rewards_arr, done_arr, truncated_arr,
      timestep_arr, episode_length);
}

// Start-state hook (fresh_start_states): a gymnasium initial state per env and episode.
__device__ void ClassicControlContinuousMountainCarEnvStartState(WkStartKey start, float* state_arr, float* observations_arr) {
  ClassicControlStartState<ClassicControlObserveState>(start, state_arr, observations_arr);
}
