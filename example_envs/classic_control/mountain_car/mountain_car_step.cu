// MountainCar step kernel (gymnasium MountainCar-v0), one thread per env on a flat grid.
//
// Mirrors example_envs/classic_control/mountain_car/mountain_car.py. Constants come from the
// prelude rendered from mountain_car/constants.py by ClassicControlMountainCarEnv.cuda_constants():
// a float64 constant kName arrives as three floats kNameHi/Mid/Lo whose double sum is exactly
// the Python value (base.py: split_double); ints arrive as ints.

#include "../classic_control.cuh"  // CC_DOUBLE, ClassicControlEndStep, ClassicControlFlatStep

constexpr double kMinPosition = CC_DOUBLE(kMinPosition);
constexpr double kMaxPosition = CC_DOUBLE(kMaxPosition);
constexpr double kMaxSpeed = CC_DOUBLE(kMaxSpeed);
constexpr double kGoalPosition = CC_DOUBLE(kGoalPosition);
constexpr double kGoalVelocity = CC_DOUBLE(kGoalVelocity);
constexpr double kForce = CC_DOUBLE(kForce);
constexpr double kGravity = CC_DOUBLE(kGravity);

// np.clip(x, lo, hi) for lo <= hi (NaN passes through).
__host__ __device__ __forceinline__ double ClipDouble(double x, double lo, double hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

// Mirrors mountain_car.py: mountain_car_transition (one env). Reads state before writing
// next_state (they may alias); returns gymnasium's `terminated` (goal reached).
__host__ __device__ inline bool MountainCarTransition(const float* state, int action,
                                                      float* next_state, float* obs,
                                                      float* reward) {
  double position = state[0];
  double velocity = state[1];
  velocity = velocity + (static_cast<double>(action - 1) * kForce + cos(3 * position) * (-kGravity));
  velocity = ClipDouble(velocity, -kMaxSpeed, kMaxSpeed);
  position = position + velocity;
  position = ClipDouble(position, kMinPosition, kMaxPosition);
  if (position == kMinPosition && velocity < 0) velocity = 0.0;
  const bool terminated = position >= kGoalPosition && velocity >= kGoalVelocity;
  next_state[0] = obs[0] = static_cast<float>(position);
  next_state[1] = obs[1] = static_cast<float>(velocity);
  *reward = -1.0f;
  return terminated;
}

// state (E, 1, 2), observations (E, 1, 2), sampled_actions (E, 1, 1), rewards (E, 1),
// _done_ (E,): 2 = goal reached (also at the time limit), 1 = time limit; _truncated_,
// _timestep_ (E,). Flat grid (classic_control.cuh).
extern "C" __global__ void CudaClassicControlMountainCarEnvStep(
    float* state_arr, float* observations_arr, const int* sampled_actions_arr, float* rewards_arr,
    int* done_arr, int* truncated_arr, int* timestep_arr, const int episode_length) {
  ClassicControlFlatStep<int, MountainCarTransition>(
      state_arr, observations_arr, sampled_actions_arr, rewards_arr, done_arr, truncated_arr,
      timestep_arr, episode_length);
}

// Start-state hook (fresh_start_states): a gymnasium initial state per env and episode.
__device__ void ClassicControlMountainCarEnvStartState(WkStartKey start, float* state_arr, float* observations_arr) {
  ClassicControlStartState<ClassicControlObserveState>(start, state_arr, observations_arr);
}
