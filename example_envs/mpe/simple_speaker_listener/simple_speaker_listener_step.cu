// MPE simple_speaker_listener_v4 step kernel: one block per env, thread kSpeaker = the speaker,
// thread kListener = the listener.
//
// Specification: MpeSimpleSpeakerListenerEnv.numpy_step (simple_speaker_listener.py and
// ../base.py). Constants come from the prelude (MpeSimpleSpeakerListenerEnv.cuda_constants); the
// physics from ../mpe.cuh.

#include "../mpe.cuh"

// Mirrors simple_speaker_listener.speaker_listener_rewards: -(dx * dx + dy * dy), (dx, dy) =
// listener - goal landmark (pos, lm: the env's rows).
__host__ __device__ inline float MpeSpeakerListenerReward(const float* pos, const float* lm, int goal) {
  const float dx = wkSubRn(pos[kListener * kDimP], lm[goal * kDimP]);
  const float dy = wkSubRn(pos[kListener * kDimP + 1], lm[goal * kDimP + 1]);
  return -wkAddRn(wkMulRn(dx, dx), wkMulRn(dy, dy));
}

// Mirrors simple_speaker_listener.speaker_listener_observations for agent `agent`: the speaker's
// row = [goal colour (3), zeros]; the listener's = [velocity, landmarks - position, word (3)].
__host__ __device__ inline void MpeSpeakerListenerObserve(const float* pos, const float* vel, const float* lm,
                                                          int goal, const float* comm, int agent, float* obs) {
  int k = 0;
  if (agent == kSpeaker) {
    for (int c = 0; c < kSpeakerObsDim; ++c) obs[k++] = c == goal ? kGoalColourOn : kGoalColourOff;
  } else {
    obs[k++] = vel[kListener * kDimP];
    obs[k++] = vel[kListener * kDimP + 1];
    for (int l = 0; l < kNumLandmarks; ++l) {
      obs[k++] = wkSubRn(lm[l * kDimP], pos[kListener * kDimP]);
      obs[k++] = wkSubRn(lm[l * kDimP + 1], pos[kListener * kDimP + 1]);
    }
    for (int c = 0; c < kDimC; ++c) obs[k++] = comm[c];
  }
  while (k < kObsDim) obs[k++] = 0.0f;  // the speaker's padding
}

// Mirrors MpeSimpleSpeakerListenerEnv.apply_actions: the speaker's action is its word (one-hot).
__host__ __device__ inline void MpeSpeakerSays(int word, float* comm) {
  for (int c = 0; c < kDimC; ++c) comm[c] = c == word ? 1.0f : 0.0f;
}

// Phase `phase` (mpe.cuh: kMpeNumPhases) of agent `agent`'s step in env `env`; `force` (2 values)
// carries the agent's force from phase 0 to phase 1. Arguments after `force`: the step kernel's.
__host__ __device__ inline void MpeSimpleSpeakerListenerAgentPhase(
    int phase, int env, int agent, float* force, float* agent_pos_arr, float* agent_vel_arr,
    const float* landmark_pos_arr, const int* goal_arr, float* speaker_comm_arr, const int* sampled_actions_arr,
    float* observations_arr, float* rewards_arr, int* done_arr, int* truncated_arr, int* timestep_arr,
    int episode_length) {
  const long long row = static_cast<long long>(env) * wkNumberAgents + agent;
  float* pos = agent_pos_arr + static_cast<long long>(env) * wkNumberAgents * kDimP;
  float* vel = agent_vel_arr + static_cast<long long>(env) * wkNumberAgents * kDimP;
  const float* lm = landmark_pos_arr + static_cast<long long>(env) * kNumLandmarks * kDimP;
  float* comm = speaker_comm_arr + static_cast<long long>(env) * kDimC;
  const bool movable = agent == kListener;
  if (phase == 0) {
    if (agent == kSpeaker) MpeSpeakerSays(sampled_actions_arr[row], comm);
    MpeAgentForce(pos, agent, sampled_actions_arr[row], movable, force, force + 1);
  } else if (phase == 1) {
    MpeAgentMove(pos, vel, agent, movable, force[0], force[1]);
  } else {
    const int goal = goal_arr[env];
    rewards_arr[row] = MpeSpeakerListenerReward(pos, lm, goal);
    MpeSpeakerListenerObserve(pos, vel, lm, goal, comm, agent, observations_arr + row * kObsDim);
    if (agent == 0) MpeEndStep(env, done_arr, truncated_arr, timestep_arr, episode_length);
  }
}

// agent_pos, agent_vel (E, 2, 2), landmark_pos (E, 3, 2), goal (E, 1), speaker_comm (E, 3),
// sampled_actions (E, 2, 1), observations (E, 2, kObsDim), rewards (E, 2), _done_, _truncated_,
// _timestep_ (E,). One block per env (MpeEnv refuses blocks_per_env > 1).
extern "C" __global__ void CudaMpeSimpleSpeakerListenerStep(
    float* agent_pos_arr, float* agent_vel_arr, const float* landmark_pos_arr, const int* goal_arr,
    float* speaker_comm_arr, const int* sampled_actions_arr, float* observations_arr, float* rewards_arr,
    int* done_arr, int* truncated_arr, int* timestep_arr, const int episode_length) {
  const bool is_agent = wkIsValidAgent();
  float force[2] = {0.0f, 0.0f};
  for (int phase = 0; phase < kMpeNumPhases; ++phase) {
    if (is_agent) {
      MpeSimpleSpeakerListenerAgentPhase(phase, wkEnvId(), wkAgentId(), force, agent_pos_arr, agent_vel_arr,
                                         landmark_pos_arr, goal_arr, speaker_comm_arr, sampled_actions_arr,
                                         observations_arr, rewards_arr, done_arr, truncated_arr, timestep_arr,
                                         episode_length);
    }
    __syncthreads();  // phase 0 (word, forces) before phase 1 moves; phase 2 reads the new state
  }
}

// Start-state hook (fresh_start_states): agents and landmarks uniform in [-1, 1)^2, the goal from
// word 2 of slot 0, then the observations (the word is the restored silence). Mirrors
// MpeEnv.numpy_start_state and MpeSimpleSpeakerListenerEnv.draw_extra_start.
__device__ void MpeSimpleSpeakerListenerStartState(WkStartKey start, float* agent_pos_arr, float* agent_vel_arr,
                                                   float* landmark_pos_arr, int* goal_arr, float* speaker_comm_arr,
                                                   float* observations_arr) {
  MpeDrawStartPositions(start, agent_pos_arr, landmark_pos_arr);
  const long long env = static_cast<long long>(start.env);
  if (threadIdx.x == 0) goal_arr[env] = static_cast<int>(wkScaleBitsToRange(wkStartWords(start, 0u).z, kNumLandmarks));
  __syncthreads();  // positions and goal are drawn before any observation reads them
  const float* pos = agent_pos_arr + env * wkNumberAgents * kDimP;
  const float* vel = agent_vel_arr + env * wkNumberAgents * kDimP;
  const float* lm = landmark_pos_arr + env * kNumLandmarks * kDimP;
  for (int a = threadIdx.x; a < wkNumberAgents; a += blockDim.x) {
    MpeSpeakerListenerObserve(pos, vel, lm, static_cast<int>(goal_arr[env]), speaker_comm_arr + env * kDimC, a,
                              observations_arr + (env * wkNumberAgents + a) * kObsDim);
  }
}
