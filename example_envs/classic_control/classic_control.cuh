// Shared by the five classic-control step kernels (<env>/<env>_step.cu include it first).
//
// * CC_DOUBLE(kName): a float64 constant rebuilt from the prelude's three floats kNameHi/Mid/Lo,
//   whose double sum is exactly the Python value (base.py: split_double).
// * ClassicControlEndStep: the episode bookkeeping of one env (base.py: ClassicControlEnv.numpy_step).
// * ClassicControlFlatStep: the body of every step kernel: one thread per env on a flat grid
//   (ceil(E / blockDim.x) blocks, env = global thread id), the env's transition, then the
//   bookkeeping. Layout: state (E, 1, kStateDim), observations (E, 1, kObsDim),
//   sampled_actions (E, 1, 1), rewards (E, 1), _done_, _truncated_, _timestep_ (E,).
// * ClassicControlStartState: the body of every env's start-state hook <Name>StartState (a fresh
//   initial state per env and episode, drawn on the device; base.py: numpy_start_state).
#pragma once

#define CC_DOUBLE(name) \
  (static_cast<double>(name##Hi) + static_cast<double>(name##Mid) + static_cast<double>(name##Lo))

// Mirrors base.py: ClassicControlEnv.numpy_step (timestep, done and truncation flags of one env):
// _done_ = kTerminalDoneValue on termination (even at the time limit), else 1 at the time limit;
// _truncated_ = 1 when the time limit ends an episode that did not terminate, else 0.
__host__ __device__ inline void ClassicControlEndStep(int env_id, bool terminated, int* done_arr,
                                                     int* truncated_arr, int* timestep_arr,
                                                     int episode_length) {
  const int t = timestep_arr[env_id] + 1;
  timestep_arr[env_id] = t;
  const bool time_up = t >= episode_length;
  done_arr[env_id] = terminated ? kTerminalDoneValue : (time_up ? 1 : 0);
  truncated_arr[env_id] = (time_up && !terminated) ? 1 : 0;
}

// One env per thread: Transition(state, action, next_state, obs, reward) -> terminated, written
// in place of the env's state row, then the bookkeeping.
template <typename Action, bool (*Transition)(const float*, Action, float*, float*, float*)>
__device__ __forceinline__ void ClassicControlFlatStep(float* state_arr, float* observations_arr,
                                                       const Action* sampled_actions_arr,
                                                       float* rewards_arr, int* done_arr,
                                                       int* truncated_arr, int* timestep_arr,
                                                       int episode_length) {
  const int env = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (env >= wkNumberEnvs) return;
  float* state = state_arr + env * kStateDim;
  const bool terminated = Transition(state, sampled_actions_arr[env], state,
                                     observations_arr + env * kObsDim, rewards_arr + env);
  ClassicControlEndStep(env, terminated, done_arr, truncated_arr, timestep_arr, episode_length);
}

// Observation = state (CartPole and both MountainCars).
__host__ __device__ inline void ClassicControlObserveState(const float* state, float* obs) {
  for (int i = 0; i < kObsDim; ++i) obs[i] = state[i];
}

// Mirrors base.py: ClassicControlEnv.numpy_start_state. Called by every thread of env
// start.env's reset block; thread 0 draws state component i uniform in
// [kStartLow[i], kStartHigh[i]) from word i of slot 0, then writes its observation.
template <void (*Observe)(const float*, float*)>
__device__ __forceinline__ void ClassicControlStartState(const WkStartKey& start, float* state_arr,
                                                         float* observations_arr) {
  static_assert(kStateDim <= 4, "one Philox block (4 words) per start state");
  if (threadIdx.x != 0) return;
  const uint4 w = wkStartWords(start, 0u);
  const unsigned int words[4] = {w.x, w.y, w.z, w.w};
  float* state = state_arr + static_cast<long long>(start.env) * kStateDim;
  for (int i = 0; i < kStateDim; ++i) state[i] = wkStartUniform(words[i], kStartLow[i], kStartHigh[i]);
  Observe(state, observations_arr + static_cast<long long>(start.env) * kObsDim);
}
