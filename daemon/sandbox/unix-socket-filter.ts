/**
 * The seccomp filter the Landlock launcher adds (docs/sandbox.md, docs/sandbox-backends.md).
 * Landlock up to ABI 7 does not mediate `connect(2)` to a path socket, so a confined command could
 * reach the daemon's socket:
 * the filter refuses `socket(AF_UNIX, …)` with EACCES (`socketpair` keeps working, so do pipes and
 * node's IPC), and `io_uring_setup`, which could create a socket past it. Under `network: 'off'`
 * it refuses every `socket(2)` whatever its family and protocol — TCP, MPTCP, UDP, SCTP, raw,
 * `AF_PACKET`, netlink, vsock… — since Landlock rules only TCP, and `socketpair(2)` of any family
 * but `AF_UNIX` (a pair reaches only itself). A syscall of another ABI (x32, 32-bit compat) is
 * refused too, so the filter cannot be walked around.
 *
 * Built as a pure function: the classic BPF program, one 8-byte `sock_filter` per instruction.
 */

const BPF_LD_W_ABS = 0x20;
const BPF_JMP_JEQ_K = 0x15;
const BPF_JMP_JGE_K = 0x35;
const BPF_RET_K = 0x06;
const SECCOMP_RET_ALLOW = 0x7fff0000;
const SECCOMP_RET_ERRNO = 0x00050000;
const EACCES = 13;
const AF_UNIX = 1;
const X32_SYSCALL_BIT = 0x40000000;
/** Offsets in `struct seccomp_data`. */
const NR = 0;
const ARCH = 4;
const ARG0 = 16;

/** The syscall numbers of one architecture. */
interface Arch {
  audit: number;
  socket: number;
  socketpair: number;
  ioUringSetup: number;
}

const ARCHES: Partial<Record<NodeJS.Architecture, Arch>> = {
  x64: { audit: 0xc000003e, socket: 41, socketpair: 53, ioUringSetup: 425 },
  arm64: { audit: 0xc00000b7, socket: 198, socketpair: 199, ioUringSetup: 425 },
};

/** True when the filter can be built for `arch`. */
export function filterSupported(arch: NodeJS.Architecture): boolean {
  return ARCHES[arch] !== undefined;
}

/** The program for `arch` as `sock_filter` bytes (little-endian); `off` refuses every socket too. */
export function unixSocketFilter(arch: NodeJS.Architecture, network: 'on' | 'off' = 'on'): Buffer {
  const a = ARCHES[arch];
  if (!a) throw new Error(`no seccomp filter for ${arch}`);
  const deny = SECCOMP_RET_ERRNO | EACCES;
  // [code, jt, jf, k]; jumps count the instructions skipped.
  const program: [number, number, number, number][] =
    network === 'on'
      ? [
          /* 0 */ [BPF_LD_W_ABS, 0, 0, ARCH],
          /* 1 */ [BPF_JMP_JEQ_K, 1, 0, a.audit],
          /* 2 */ [BPF_RET_K, 0, 0, deny],
          /* 3 */ [BPF_LD_W_ABS, 0, 0, NR],
          /* 4 */ [BPF_JMP_JGE_K, 5, 0, X32_SYSCALL_BIT],
          /* 5 */ [BPF_JMP_JEQ_K, 4, 0, a.ioUringSetup],
          /* 6 */ [BPF_JMP_JEQ_K, 0, 2, a.socket],
          /* 7 */ [BPF_LD_W_ABS, 0, 0, ARG0],
          /* 8 */ [BPF_JMP_JEQ_K, 1, 0, AF_UNIX],
          /* 9 */ [BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW],
          /* 10 */ [BPF_RET_K, 0, 0, deny],
        ]
      : [
          /* 0 */ [BPF_LD_W_ABS, 0, 0, ARCH],
          /* 1 */ [BPF_JMP_JEQ_K, 1, 0, a.audit],
          /* 2 */ [BPF_RET_K, 0, 0, deny],
          /* 3 */ [BPF_LD_W_ABS, 0, 0, NR],
          /* 4 */ [BPF_JMP_JGE_K, 6, 0, X32_SYSCALL_BIT],
          /* 5 */ [BPF_JMP_JEQ_K, 5, 0, a.ioUringSetup],
          /* 6 */ [BPF_JMP_JEQ_K, 4, 0, a.socket],
          /* 7 */ [BPF_JMP_JEQ_K, 0, 2, a.socketpair],
          /* 8 */ [BPF_LD_W_ABS, 0, 0, ARG0],
          /* 9 */ [BPF_JMP_JEQ_K, 0, 1, AF_UNIX],
          /* 10 */ [BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW],
          /* 11 */ [BPF_RET_K, 0, 0, deny],
        ];
  const bytes = Buffer.alloc(program.length * 8);
  program.forEach(([code, jt, jf, k], i) => {
    bytes.writeUInt16LE(code, i * 8);
    bytes.writeUInt8(jt, i * 8 + 2);
    bytes.writeUInt8(jf, i * 8 + 3);
    bytes.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return bytes;
}
