// MPE world physics shared by the MPE step kernels (<env>/<env>_step.cu include it first).
//
// Specification: example_envs/mpe/physics.py (each helper names the function it mirrors), which
// follows mpe2's World.step in float32. Every product and sum is rounded on its own (wkMulRn,
// wkAddRn: never an FMA) and the softplus of the contact force is evaluated in double and rounded
// once, so the kernels and the NumPy twin agree bit for bit up to the last ulp of exp / log1p.
//
// Layout (one env = one block, one thread per agent): agent_pos, agent_vel (E, N, 2),
// landmark_pos (E, L, 2), sampled_actions (E, N, 1), observations (E, N, kObsDim), rewards (E, N),
// _done_, _truncated_, _timestep_ (E,). The helpers take the env's rows (pointer + env offset).
// Constants (prelude, from MpeEnv.cuda_constants): kDimP, kNumLandmarks, kObsDim, kDt,
// kVelocityKeep, kContactForce, kContactMargin, kAccel, kContactDistance, kAgentsCollide,
// kStartLow, kStartHigh.
#pragma once

// Mirrors physics.move_force: the action force of one agent (0 unless movable and 1 <= a <= 4;
// axis x for 1-2, y for 3-4; even: +1, odd: -1; times kAccel).
__host__ __device__ inline void MpeMoveForce(int action, bool movable, float* fx, float* fy) {
  float dx = 0.0f;
  float dy = 0.0f;
  if (action >= 1 && action <= 4) {
    const float sign = (action % 2 == 0) ? 1.0f : -1.0f;
    if (action <= 2) {
      dx = sign;
    } else {
      dy = sign;
    }
  }
  *fx = movable ? wkMulRn(dx, kAccel) : 0.0f;
  *fy = movable ? wkMulRn(dy, kAccel) : 0.0f;
}

// Mirrors physics.distance: sqrt(dx * dx + dy * dy) in float32.
__host__ __device__ inline float MpeNorm(float dx, float dy) {
  return sqrtf(wkAddRn(wkMulRn(dx, dx), wkMulRn(dy, dy)));
}

// Mirrors physics.penetration: k * softplus(-(d - d_min) / k) in double, rounded once.
__host__ __device__ inline float MpePenetration(float dist, float dist_min) {
  const double k = static_cast<double>(kContactMargin);
  const double x = -(static_cast<double>(dist) - static_cast<double>(dist_min)) / k;
  const double soft = fmax(x, 0.0) + log1p(exp(-fabs(x)));
  return static_cast<float>(soft * k);
}

// Mirrors physics.add_contact_forces for one agent: pos = the env's (N, 2) agent positions;
// adds the push of every other agent j, in ascending j, to (*fx, *fy).
__host__ __device__ inline void MpeAddContactForces(const float* pos, int agent, float* fx, float* fy) {
  const float px = pos[agent * kDimP];
  const float py = pos[agent * kDimP + 1];
  for (int j = 0; j < wkNumberAgents; ++j) {
    if (j == agent) continue;
    const float dx = wkSubRn(px, pos[j * kDimP]);
    const float dy = wkSubRn(py, pos[j * kDimP + 1]);
    const float d = MpeNorm(dx, dy);
    const float pen = MpePenetration(d, kContactDistance);
    *fx = wkAddRn(*fx, wkMulRn(wkMulRn(kContactForce, dx) / d, pen));
    *fy = wkAddRn(*fy, wkMulRn(wkMulRn(kContactForce, dy) / d, pen));
  }
}

// Mirrors physics.integrate for one movable agent: pos += vel * dt, then
// vel = vel * (1 - damping) + force * dt (pos, vel: the agent's 2 values).
__host__ __device__ inline void MpeIntegrate(float* pos, float* vel, float fx, float fy) {
  pos[0] = wkAddRn(pos[0], wkMulRn(vel[0], kDt));
  pos[1] = wkAddRn(pos[1], wkMulRn(vel[1], kDt));
  vel[0] = wkAddRn(wkMulRn(vel[0], kVelocityKeep), wkMulRn(fx, kDt));
  vel[1] = wkAddRn(wkMulRn(vel[1], kVelocityKeep), wkMulRn(fy, kDt));
}

// Mirrors physics.end_step for env `env`: _timestep_ += 1; _done_ = _truncated_ = (t >= T).
__host__ __device__ inline void MpeEndStep(int env, int* done_arr, int* truncated_arr, int* timestep_arr,
                                           int episode_length) {
  const int t = timestep_arr[env] + 1;
  timestep_arr[env] = t;
  const int time_up = t >= episode_length ? 1 : 0;
  done_arr[env] = time_up;
  truncated_arr[env] = time_up;
}

// A step kernel runs kMpeNumPhases phases of each agent's step, separated by barriers
// (<env>_step.cu: Mpe<Name>AgentPhase, __host__ __device__ so that a host program can run them
// agent by agent): 0 = the agent's force (reads every position before anyone moves), 1 = its move,
// 2 = its reward and observation of the new state (and the env's bookkeeping, by agent 0).
constexpr int kMpeNumPhases = 3;

// The physics of phases 0 and 1. Mirrors MpeEnv.numpy_step's physics (base.py).
__host__ __device__ inline void MpeAgentForce(const float* pos, int agent, int move, bool movable, float* fx,
                                              float* fy) {
  MpeMoveForce(move, movable, fx, fy);
  if (kAgentsCollide) MpeAddContactForces(pos, agent, fx, fy);
}

__host__ __device__ inline void MpeAgentMove(float* pos, float* vel, int agent, bool movable, float fx, float fy) {
  if (movable) MpeIntegrate(pos + agent * kDimP, vel + agent * kDimP, fx, fy);
}

// Mirrors physics.start_positions: called by every thread of env start.env's reset block; slot s
// < N is agent s, slot N + l is landmark l; x from word 0, y from word 1.
__device__ inline void MpeDrawStartPositions(const WkStartKey& start, float* agent_pos_arr,
                                             float* landmark_pos_arr) {
  const long long env = static_cast<long long>(start.env);
  for (int s = threadIdx.x; s < wkNumberAgents + kNumLandmarks; s += blockDim.x) {
    const uint4 w = wkStartWords(start, static_cast<unsigned int>(s));
    float* xy = s < wkNumberAgents ? agent_pos_arr + (env * wkNumberAgents + s) * kDimP
                                   : landmark_pos_arr + (env * kNumLandmarks + (s - wkNumberAgents)) * kDimP;
    xy[0] = wkStartUniform(w.x, kStartLow, kStartHigh);
    xy[1] = wkStartUniform(w.y, kStartLow, kStartHigh);
  }
}
