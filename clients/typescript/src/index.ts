// blitz-client: a TypeScript client of Blitz, the agent session server.
//
// The generated connect-es stubs of blitz.v1 (messages, enums and the services), and
// `createBlitz`, which wraps them with what every client needs: the bearer token, errors
// with their ErrorInfo parsed (BlitzError), unary calls sent again while a server shuts
// down, and streams resumed after a drop from the last seq seen, with no duplicate and no
// gap. See README.md.

export * from "./client.js";
export * from "./errors.js";
export * from "./gen/blitz/v1/hooks_pb.js";
export * from "./gen/blitz/v1/schedules_pb.js";
export * from "./gen/blitz/v1/session_pb.js";
export * from "./gen/blitz/v1/turn_pb.js";
export * from "./gen/blitz/v1/webhooks_pb.js";
export * from "./gen/blitz/v1/workflow_pb.js";
export * from "./gen/blitz/v1/workspace_pb.js";
export { resumed, retried, type ResumeOptions, type StreamOpener, type StreamStatus } from "./resume.js";
