import * as grpc from "@grpc/grpc-js";
import {
  create,
  fromBinary,
  toBinary,
  type DescMessage,
  type DescMethod,
  type DescService,
  type Message,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";

/**
 * A stock @grpc/grpc-js client for a protobuf-es service: what a third-party gRPC caller would
 * use, with no Connect code on the client side. Unary methods resolve with the response, and
 * bidirectional ones send every request, half-close, and resolve with every response. A
 * failure rejects with grpc-js's ServiceError, with its numeric `code` and its `details`.
 */
export type GrpcClient<S extends DescService> = {
  [K in keyof S["method"]]: S["method"][K] extends { methodKind: "unary"; input: infer I extends DescMessage; output: infer O extends DescMessage }
    ? (request: MessageInitShape<I>) => Promise<MessageShape<O>>
    : S["method"][K] extends { methodKind: "bidi_streaming"; input: infer I extends DescMessage; output: infer O extends DescMessage }
      ? (requests: MessageInitShape<I>[]) => Promise<MessageShape<O>[]>
      : never;
} & { close(): void };

type UnaryMethod = (
  this: grpc.Client,
  request: Message,
  metadata: grpc.Metadata,
  callback: grpc.requestCallback<Message>,
) => grpc.ClientUnaryCall;
type BidiMethod = (this: grpc.Client, metadata: grpc.Metadata) => grpc.ClientDuplexStream<Message, Message>;

/**
 * `address` is host:port. With `key`, every call sends `authorization: Bearer <key>`.
 */
export function createGrpcClient<S extends DescService>(service: S, address: string, key?: string): GrpcClient<S> {
  const definition: Record<string, grpc.MethodDefinition<Message, Message>> = {};
  for (const method of service.methods) definition[method.localName] = methodDefinition(service, method);
  const Client = grpc.makeGenericClientConstructor(definition, service.typeName);
  const client = new Client(address, grpc.credentials.createInsecure());
  const metadata = () => {
    const md = new grpc.Metadata();
    if (key !== undefined) md.set("authorization", `Bearer ${key}`);
    return md;
  };

  const facade: Record<string, unknown> = { close: () => client.close() };
  for (const method of service.methods) {
    const stub = client[method.localName];
    if (!stub) throw new Error(`grpc-js made no stub for ${method.name}`);
    switch (method.methodKind) {
      case "unary":
        facade[method.localName] = (request: MessageInitShape<DescMessage>) =>
          new Promise<Message>((resolve, reject) => {
            (stub as UnaryMethod).call(client, create(method.input, request), metadata(), (err, response) => {
              if (err) reject(err);
              else if (response) resolve(response);
              else reject(new Error(`${method.name} answered no message`));
            });
          });
        break;
      case "bidi_streaming":
        facade[method.localName] = (requests: MessageInitShape<DescMessage>[]) =>
          new Promise<Message[]>((resolve, reject) => {
            const call = (stub as BidiMethod).call(client, metadata());
            const responses: Message[] = [];
            call.on("data", (response: Message) => responses.push(response));
            call.on("error", reject);
            call.on("end", () => resolve(responses));
            for (const request of requests) call.write(create(method.input, request));
            call.end();
          });
        break;
      default:
        // Warden has no client- or server-streaming RPCs; add them here when it does.
        facade[method.localName] = () => Promise.reject(new Error(`${method.methodKind} is not supported here`));
    }
  }
  return facade as GrpcClient<S>;
}

function methodDefinition(service: DescService, method: DescMethod): grpc.MethodDefinition<Message, Message> {
  return {
    path: `/${service.typeName}/${method.name}`,
    requestStream: method.methodKind === "client_streaming" || method.methodKind === "bidi_streaming",
    responseStream: method.methodKind === "server_streaming" || method.methodKind === "bidi_streaming",
    requestSerialize: (message) => Buffer.from(toBinary(method.input, message)),
    requestDeserialize: (bytes) => fromBinary(method.input, bytes),
    responseSerialize: (message) => Buffer.from(toBinary(method.output, message)),
    responseDeserialize: (bytes) => fromBinary(method.output, bytes),
  };
}
