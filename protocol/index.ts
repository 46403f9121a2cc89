/** The protocol shared by the daemon and its clients. */
export * from './config.js';
export * from './errors.js';
export * from './fields.js';
export * from './methods.js';
export * from './sandbox.js';
export * from './types.js';
export * from './platform.js';
export * from './terminal.js';
