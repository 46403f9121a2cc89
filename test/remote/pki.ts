/**
 * Throwaway TLS material for a test, made with `openssl`: a CA, a server certificate for the given
 * IP addresses, and a client certificate — each signed by the CA — all in a temp dir.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Paths of a CA's files. */
export interface CaFiles {
  cert: string;
  key: string;
}

/** A certificate and its key, as paths. */
export interface CertFiles {
  cert: string;
  key: string;
}

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** Makes a self-signed CA named `name` in `dir`. */
export function makeCa(dir: string, name: string): CaFiles {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  openssl(
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'].concat([
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      `/CN=${name}`,
    ]),
  );
  return { cert, key };
}

/**
 * Makes a certificate `name` signed by `ca`: a server one for `ips` (its subjectAltName: IP
 * addresses, and DNS names for entries with a letter in them), or a client one when `ips` is empty.
 */
export function makeCert(dir: string, ca: CaFiles, name: string, ips: string[] = []): CertFiles {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  openssl(
    ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'].concat([
      '-keyout',
      key,
      '-out',
      csr,
      '-subj',
      `/CN=${name}`,
    ]),
  );
  const lines =
    ips.length > 0
      ? [
          `subjectAltName=${ips.map((ip) => (/[a-z]/i.test(ip) && !ip.includes(':') ? `DNS:${ip}` : `IP:${ip}`)).join(',')}`,
          'extendedKeyUsage=serverAuth',
        ]
      : ['extendedKeyUsage=clientAuth'];
  writeFileSync(ext, `${lines.join('\n')}\n`);
  openssl(
    ['x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial'].concat([
      '-out',
      cert,
      '-days',
      '1',
      '-extfile',
      ext,
    ]),
  );
  return { cert, key };
}

/** Reads a PEM file. */
export function pem(path: string): Buffer {
  return readFileSync(path);
}
