"""DQN in the shape of the PyTorch Lightning DQN example, without Lightning: a ReplayBuffer (a deque of Experience
namedtuples), an RLDataset(IterableDataset) whose __iter__ samples `sample_size` experiences from the buffer, and a
DataLoader over it. Every training batch the Agent also plays one step of the environment (a NumPy CartPole) and
appends it to the buffer; the target network is synced every `sync_rate` steps. No num_workers is given: the buffer
lives in the main process."""
import argparse
import collections
import math

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, IterableDataset

Experience = collections.namedtuple("Experience", ["state", "action", "reward", "done", "new_state"])


class CartPole:
    """The classic control equations (Barto, Sutton and Anderson), Euler steps, 200-step episodes."""

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)
        self.reset()

    def reset(self):
        self.s = self.rng.uniform(-0.05, 0.05, 4)
        self.t = 0
        return self.s.astype(np.float32)

    def step(self, action):
        x, x_dot, th, th_dot = self.s
        force = 10.0 if action == 1 else -10.0
        cos, sin = math.cos(th), math.sin(th)
        temp = (force + 0.05 * th_dot ** 2 * sin) / 1.1
        th_acc = (9.8 * sin - cos * temp) / (0.5 * (4.0 / 3.0 - 0.1 * cos ** 2 / 1.1))
        x_acc = temp - 0.05 * th_acc * cos / 1.1
        self.s = np.array([x + 0.02 * x_dot, x_dot + 0.02 * x_acc, th + 0.02 * th_dot, th_dot + 0.02 * th_acc])
        self.t += 1
        done = abs(self.s[0]) > 2.4 or abs(self.s[2]) > 0.2095 or self.t >= 200
        return self.s.astype(np.float32), 1.0, done


class ReplayBuffer:
    def __init__(self, capacity):
        self.buffer = collections.deque(maxlen=capacity)

    def __len__(self):
        return len(self.buffer)

    def append(self, experience):
        self.buffer.append(experience)

    def sample(self, batch_size):
        indices = np.random.choice(len(self.buffer), batch_size, replace=False)
        states, actions, rewards, dones, next_states = zip(*(self.buffer[idx] for idx in indices))
        return (np.array(states), np.array(actions), np.array(rewards, dtype=np.float32),
                np.array(dones, dtype=bool), np.array(next_states))


class RLDataset(IterableDataset):
    def __init__(self, buffer, sample_size=200):
        self.buffer, self.sample_size = buffer, sample_size

    def __iter__(self):
        states, actions, rewards, dones, new_states = self.buffer.sample(self.sample_size)
        for i in range(len(dones)):
            yield states[i], actions[i], rewards[i], dones[i], new_states[i]


class Agent:
    def __init__(self, env, buffer):
        self.env, self.buffer = env, buffer
        self.state = env.reset()
        self.episode_reward, self.finished = 0.0, []

    @torch.no_grad()
    def play_step(self, net, epsilon):
        if np.random.random() < epsilon:
            action = np.random.randint(2)
        else:
            action = int(net(torch.from_numpy(self.state)[None]).argmax(1))
        new_state, reward, done = self.env.step(action)
        self.buffer.append(Experience(self.state, action, reward, done, new_state))
        self.state, self.episode_reward = new_state, self.episode_reward + reward
        if done:
            self.finished.append(self.episode_reward)
            self.state, self.episode_reward = self.env.reset(), 0.0


def dqn_mse_loss(batch, net, target_net, gamma):
    states, actions, rewards, dones, next_states = batch
    q = net(states).gather(1, actions.long().unsqueeze(-1)).squeeze(-1)
    with torch.no_grad():
        next_q = target_net(next_states).max(1)[0]
        next_q[dones] = 0.0
    return nn.functional.mse_loss(q, rewards + gamma * next_q)


def make_net(hidden=512):
    return nn.Sequential(nn.Linear(4, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--sample-size", type=int, default=4096)
    ap.add_argument("--sync-rate", type=int, default=100)
    ap.add_argument("--lr", type=float, default=1e-3)
    args = ap.parse_args()
    torch.manual_seed(0)
    np.random.seed(0)

    net = make_net()
    target_net = make_net()
    target_net.load_state_dict(net.state_dict())
    buffer = ReplayBuffer(20_000)
    agent = Agent(CartPole(seed=0), buffer)
    for _ in range(args.sample_size):  # warm start: fill the buffer with random play
        agent.play_step(net, epsilon=1.0)
    agent.finished.clear()

    loader = DataLoader(RLDataset(buffer, args.sample_size), batch_size=args.batch_size)
    optimizer = torch.optim.Adam(net.parameters(), lr=args.lr)
    global_step = 0
    for epoch in range(args.epochs):
        losses = []
        for batch in loader:
            epsilon = max(0.05, 1.0 - global_step / 2000)
            agent.play_step(net, epsilon)
            loss = dqn_mse_loss(batch, net, target_net, gamma=0.99)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            global_step += 1
            if global_step % args.sync_rate == 0:
                target_net.load_state_dict(net.state_dict())
            losses.append(loss.item())
        recent = agent.finished[-10:] or [float("nan")]
        print(f"epoch {epoch}: {len(losses)} batches, loss {np.mean(losses):.4f}, buffer {len(buffer)}, "
              f"mean return (last 10 episodes) {np.mean(recent):.1f}", flush=True)


if __name__ == "__main__":
    main()
