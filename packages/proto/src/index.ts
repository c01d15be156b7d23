// Generated protobuf code for the edge⇄node wire and the operator API. Only @iop/wire imports this package.
export * as runtime from './gen/iop/runtime.js';
export * as admin from './gen/iop/admin.js';
// The reader the generated decoders take (@iop/wire passes its own subclass of it).
export { BinaryReader } from '@bufbuild/protobuf/wire';
// The writer the generated encoders take (@iop/wire reuses one for every frame).
export { BinaryWriter } from '@bufbuild/protobuf/wire';
