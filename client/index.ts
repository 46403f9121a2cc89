/**
 * The `execd` package's main entry: the client library (connect, call, run), the model-facing
 * tools and their rendering. Method declarations and protocol types are in `execd-daemon/protocol`.
 */
export { connect } from './connect.js';
export { AutostartError } from './autostart-error.js';
export {
  ExecdClient,
  ExecdConnectError,
  ExecdRpcError,
  readToken,
  readAdminToken,
  isYielded,
  type CallOptions,
  type ConnectOptions,
  type RunOptions,
  type RunParams,
} from './connection.js';
export { resolveEndpoint, type Endpoint } from './endpoint.js';
export { FsClient, type TransferOptions, type UploadOptions } from './fs.js';
export type { DownloadTreeOptions, TreeTransferResult, UploadTreeOptions } from './fs-tree.js';
export * from '../shared/render.js';
export * from './tool/index.js';
