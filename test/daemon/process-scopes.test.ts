/**
 * Where the daemon's own cgroup is mounted, from `/proc/self/cgroup` and `/proc/self/mountinfo`
 * as they read on a host with both hierarchies, a systemd host with cgroup v2 only, and containers
 * with and without a cgroup namespace.
 */
import { describe, expect, it } from 'vitest';
import { parseCgroupHomes } from '../../daemon/processes/process-scopes.js';

/** One mountinfo line of a cgroup mount. */
function mount(root: string, point: string, fstype: 'cgroup' | 'cgroup2', superOptions = 'rw'): string {
  return `30 25 0:26 ${root} ${point} rw,nosuid,nodev,noexec,relatime shared:4 - ${fstype} cgroup ${superOptions}`;
}

const PROC_MOUNT = '22 1 0:5 / /proc rw,relatime shared:13 - proc proc rw';

describe('parseCgroupHomes', () => {
  it('a host with v1 controllers and v2 at /sys/fs/cgroup/unified: v2 first, then pids and freezer', () => {
    const own = ['8:pids:/', '6:freezer:/', '4:memory:/process_api/1e83', '0::/'].join('\n');
    const mountinfo = [
      PROC_MOUNT,
      mount('/', '/sys/fs/cgroup/memory', 'cgroup', 'rw,memory'),
      mount('/', '/sys/fs/cgroup/freezer', 'cgroup', 'rw,freezer'),
      mount('/', '/sys/fs/cgroup/pids', 'cgroup', 'rw,pids'),
      mount('/', '/sys/fs/cgroup/unified', 'cgroup2'),
    ].join('\n');
    expect(parseCgroupHomes(own, mountinfo)).toEqual([
      { dir: '/sys/fs/cgroup/unified', kind: 'cgroup2' },
      { dir: '/sys/fs/cgroup/pids', kind: 'pids' },
      { dir: '/sys/fs/cgroup/freezer', kind: 'freezer' },
    ]);
  });

  it('a systemd host with cgroup v2 only: the user scope below the mount point', () => {
    const own = '0::/user.slice/user-1000.slice/user@1000.service/app.slice/execd.scope';
    const homes = parseCgroupHomes(own, [PROC_MOUNT, mount('/', '/sys/fs/cgroup', 'cgroup2')].join('\n'));
    expect(homes).toEqual([
      { dir: '/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/execd.scope', kind: 'cgroup2' },
    ]);
  });

  it('a container with a cgroup namespace: its root is the mount point', () => {
    expect(parseCgroupHomes('0::/', mount('/', '/sys/fs/cgroup', 'cgroup2'))).toEqual([
      { dir: '/sys/fs/cgroup', kind: 'cgroup2' },
    ]);
  });

  it('a container without a cgroup namespace: the path is taken below the mount root, or skipped outside it', () => {
    const mountinfo = mount('/docker/abc', '/sys/fs/cgroup', 'cgroup2');
    expect(parseCgroupHomes('0::/docker/abc/sub', mountinfo)).toEqual([{ dir: '/sys/fs/cgroup/sub', kind: 'cgroup2' }]);
    expect(parseCgroupHomes('0::/docker/abc', mountinfo)).toEqual([{ dir: '/sys/fs/cgroup', kind: 'cgroup2' }]);
    // A sibling whose name starts like the root is not below it.
    expect(parseCgroupHomes('0::/docker/abcdef', mountinfo)).toEqual([]);
  });

  it('nothing mounted, or no cgroup line: no home', () => {
    expect(parseCgroupHomes('0::/', PROC_MOUNT)).toEqual([]);
    expect(parseCgroupHomes('', mount('/', '/sys/fs/cgroup', 'cgroup2'))).toEqual([]);
    // A v1 memory hierarchy alone is not used (a resource limit may depend on it).
    expect(parseCgroupHomes('4:memory:/', mount('/', '/sys/fs/cgroup/memory', 'cgroup', 'rw,memory'))).toEqual([]);
  });
});
