import sys, time

def loader(batches, build_s):
    for i in range(batches):
        if build_s:
            time.sleep(build_s)      # building a batch in the main process (num_workers=0)
        yield i, i

def model(x, compute_s):
    time.sleep(compute_s)
    return x

class Optimizer:
    def step(self):
        pass

@profile
def train(train_loader, compute_s, optimizer):
    for batch_idx, (data, target) in enumerate(train_loader):
        output = model(data, compute_s)
        loss = output - target
        optimizer.step()

build_ms, compute_ms = float(sys.argv[1]), float(sys.argv[2])
train(loader(25, build_ms / 1e3), compute_ms / 1e3, Optimizer())
