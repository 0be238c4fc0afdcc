// MPE simple_spread_v3 step kernel: one block per env, one thread per agent.
//
// Specification: MpeSimpleSpreadEnv.numpy_step (simple_spread.py and ../base.py). Constants come
// from the prelude (MpeSimpleSpreadEnv.cuda_constants); the physics from ../mpe.cuh.

#include "../mpe.cuh"

// Mirrors simple_spread.spread_rewards for agent `agent`: pos (N, 2) and lm (L, 2) are the env's rows.
__host__ __device__ inline float MpeSpreadReward(const float* pos, const float* lm, int agent, float local_ratio) {
  float total = 0.0f;
  for (int l = 0; l < kNumLandmarks; ++l) {
    float nearest = 0.0f;
    for (int a = 0; a < wkNumberAgents; ++a) {
      const float d = MpeNorm(wkSubRn(pos[a * kDimP], lm[l * kDimP]), wkSubRn(pos[a * kDimP + 1], lm[l * kDimP + 1]));
      nearest = a == 0 ? d : fminf(nearest, d);
    }
    total = wkSubRn(total, nearest);
  }
  float local = 0.0f;
  for (int j = 0; j < wkNumberAgents; ++j) {
    if (j == agent) continue;
    const float d = MpeNorm(wkSubRn(pos[agent * kDimP], pos[j * kDimP]),
                            wkSubRn(pos[agent * kDimP + 1], pos[j * kDimP + 1]));
    if (d < kContactDistance) local = wkSubRn(local, 1.0f);
  }
  return wkAddRn(wkMulRn(total, wkSubRn(1.0f, local_ratio)), wkMulRn(local, local_ratio));
}

// Mirrors simple_spread.spread_observations for agent `agent`: [vel, pos, landmarks - pos,
// others - pos, others' words (zeros)] into obs (kObsDim values).
__host__ __device__ inline void MpeSpreadObserve(const float* pos, const float* vel, const float* lm, int agent,
                                                 float* obs) {
  const float px = pos[agent * kDimP];
  const float py = pos[agent * kDimP + 1];
  int k = 0;
  obs[k++] = vel[agent * kDimP];
  obs[k++] = vel[agent * kDimP + 1];
  obs[k++] = px;
  obs[k++] = py;
  for (int l = 0; l < kNumLandmarks; ++l) {
    obs[k++] = wkSubRn(lm[l * kDimP], px);
    obs[k++] = wkSubRn(lm[l * kDimP + 1], py);
  }
  for (int j = 0; j < wkNumberAgents; ++j) {
    if (j == agent) continue;
    obs[k++] = wkSubRn(pos[j * kDimP], px);
    obs[k++] = wkSubRn(pos[j * kDimP + 1], py);
  }
  while (k < kObsDim) obs[k++] = 0.0f;  // the silent agents' communication channels
}

// Mirrors simple_spread.spread_state for agent `agent`'s share of env `env`'s state row (kStateDim values):
// its position at 2a, its velocity at 2N + 2a, landmark a's position at 4N + 2a (one landmark per agent).
__host__ __device__ inline void MpeSpreadWriteState(const float* pos, const float* vel, const float* lm, int agent,
                                                    float* state) {
  for (int d = 0; d < kDimP; ++d) {
    state[agent * kDimP + d] = pos[agent * kDimP + d];
    state[(wkNumberAgents + agent) * kDimP + d] = vel[agent * kDimP + d];
    state[(2 * wkNumberAgents + agent) * kDimP + d] = lm[agent * kDimP + d];
  }
}

// Phase `phase` (mpe.cuh: kMpeNumPhases) of agent `agent`'s step in env `env`; `force` (2 values)
// carries the agent's force from phase 0 to phase 1. Arguments after `force`: the step kernel's.
__host__ __device__ inline void MpeSimpleSpreadAgentPhase(int phase, int env, int agent, float* force,
                                                          float* agent_pos_arr, float* agent_vel_arr,
                                                          const float* landmark_pos_arr, const int* sampled_actions_arr,
                                                          float* observations_arr, float* rewards_arr, float* state_arr,
                                                          int* done_arr, int* truncated_arr, int* timestep_arr,
                                                          float local_ratio, int episode_length) {
  const long long row = static_cast<long long>(env) * wkNumberAgents + agent;
  float* pos = agent_pos_arr + static_cast<long long>(env) * wkNumberAgents * kDimP;
  float* vel = agent_vel_arr + static_cast<long long>(env) * wkNumberAgents * kDimP;
  const float* lm = landmark_pos_arr + static_cast<long long>(env) * kNumLandmarks * kDimP;
  if (phase == 0) {
    MpeAgentForce(pos, agent, sampled_actions_arr[row], true, force, force + 1);
  } else if (phase == 1) {
    MpeAgentMove(pos, vel, agent, true, force[0], force[1]);
  } else {
    rewards_arr[row] = MpeSpreadReward(pos, lm, agent, local_ratio);
    MpeSpreadObserve(pos, vel, lm, agent, observations_arr + row * kObsDim);
    MpeSpreadWriteState(pos, vel, lm, agent, state_arr + static_cast<long long>(env) * kStateDim);
    if (agent == 0) MpeEndStep(env, done_arr, truncated_arr, timestep_arr, episode_length);
  }
}

// agent_pos, agent_vel (E, N, 2), landmark_pos (E, N, 2), sampled_actions (E, N, 1),
// observations (E, N, kObsDim), rewards (E, N), state (E, kStateDim), _done_, _truncated_, _timestep_ (E,).
// One block per env (MpeEnv refuses blocks_per_env > 1): the barriers order the phases.
extern "C" __global__ void CudaMpeSimpleSpreadStep(float* agent_pos_arr, float* agent_vel_arr,
                                                   const float* landmark_pos_arr, const int* sampled_actions_arr,
                                                   float* observations_arr, float* rewards_arr, float* state_arr,
                                                   int* done_arr, int* truncated_arr, int* timestep_arr,
                                                   const float local_ratio, const int episode_length) {
  const bool is_agent = wkIsValidAgent();
  float force[2] = {0.0f, 0.0f};
  for (int phase = 0; phase < kMpeNumPhases; ++phase) {
    if (is_agent) {
      MpeSimpleSpreadAgentPhase(phase, wkEnvId(), wkAgentId(), force, agent_pos_arr, agent_vel_arr, landmark_pos_arr,
                                sampled_actions_arr, observations_arr, rewards_arr, state_arr, done_arr,
                                truncated_arr, timestep_arr, local_ratio, episode_length);
    }
    __syncthreads();  // phase 0 reads every position before phase 1 moves; phase 2 reads the moved state
  }
}

// Start-state hook (fresh_start_states): agents and landmarks uniform in [-1, 1)^2, then the
// observations at rest and the state. Mirrors MpeSimpleSpreadEnv.numpy_start_state.
__device__ void MpeSimpleSpreadStartState(WkStartKey start, float* agent_pos_arr, float* agent_vel_arr,
                                          float* landmark_pos_arr, float* observations_arr, float* state_arr) {
  MpeDrawStartPositions(start, agent_pos_arr, landmark_pos_arr);
  __syncthreads();  // every position is drawn before any observation reads it
  const long long env = static_cast<long long>(start.env);
  const float* pos = agent_pos_arr + env * wkNumberAgents * kDimP;
  const float* vel = agent_vel_arr + env * wkNumberAgents * kDimP;
  const float* lm = landmark_pos_arr + env * kNumLandmarks * kDimP;
  for (int a = threadIdx.x; a < wkNumberAgents; a += blockDim.x) {
    MpeSpreadObserve(pos, vel, lm, a, observations_arr + (env * wkNumberAgents + a) * kObsDim);
    MpeSpreadWriteState(pos, vel, lm, a, state_arr + env * kStateDim);
  }
}
