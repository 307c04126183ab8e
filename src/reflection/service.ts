import { create, fromBinary, toBinary, type DescFile, type DescService } from "@bufbuild/protobuf";
import { Code, type ConnectRouter } from "@connectrpc/connect";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { DescriptorIndex } from "./descriptors.ts";

type Response = v1.ServerReflectionResponse["messageResponse"];

/**
 * gRPC server reflection, so that grpcurl, buf curl and the like can list and describe the API
 * without its .proto files. Both grpc.reflection.v1 and the older v1alpha, which some clients
 * still ask first, describe `services` and themselves.
 *
 * Reflection reveals the schema, never data, and is served without an API key (authInterceptor
 * lets it through). It works over gRPC and gRPC-Web on HTTP/2: it is a bidirectional stream.
 */
export function reflectionRoutes(services: readonly DescService[]): (router: ConnectRouter) => void {
  const all = [...services, v1.ServerReflection, v1alpha.ServerReflection];
  const index = new DescriptorIndex(all);
  const serviceNames = all.map((service) => service.typeName);
  return (router) => {
    router.service(v1.ServerReflection, {
      async *serverReflectionInfo(requests) {
        const sent = new Set<string>();
        for await (const request of requests) yield answer(index, serviceNames, request, sent);
      },
    });
    router.service(v1alpha.ServerReflection, {
      async *serverReflectionInfo(requests) {
        const sent = new Set<string>();
        for await (const request of requests) {
          // v1alpha is v1 under another package name: the same messages, byte for byte.
          const asV1 = fromBinary(v1.ServerReflectionRequestSchema, toBinary(v1alpha.ServerReflectionRequestSchema, request));
          const response = answer(index, serviceNames, asV1, sent);
          yield fromBinary(v1alpha.ServerReflectionResponseSchema, toBinary(v1.ServerReflectionResponseSchema, response));
        }
      },
    });
  };
}

/** One answer per request; a lookup that fails is an error_response, and the stream goes on. */
function answer(
  index: DescriptorIndex,
  serviceNames: readonly string[],
  request: v1.ServerReflectionRequest,
  sent: Set<string>,
): v1.ServerReflectionResponse {
  const files = (file: DescFile | undefined, notFoundMessage: string): Response =>
    file
      ? { case: "fileDescriptorResponse", value: create(v1.FileDescriptorResponseSchema, { fileDescriptorProto: index.serialize(file, sent) }) }
      : error(Code.NotFound, notFoundMessage);
  const query = request.messageRequest;
  let response: Response;
  switch (query.case) {
    case "listServices":
      response = {
        case: "listServicesResponse",
        value: create(v1.ListServiceResponseSchema, { service: serviceNames.map((name) => ({ name })) }),
      };
      break;
    case "fileByFilename":
      response = files(index.fileByName(query.value), `File not found: ${query.value}`);
      break;
    case "fileContainingSymbol":
      response = files(index.fileContainingSymbol(query.value), `Symbol not found: ${query.value}`);
      break;
    case "fileContainingExtension": {
      const { containingType, extensionNumber } = query.value;
      response = files(
        index.fileContainingExtension(containingType, extensionNumber),
        `Extension not found: ${containingType} field ${extensionNumber}`,
      );
      break;
    }
    case "allExtensionNumbersOfType": {
      const numbers = index.extensionNumbersOf(query.value);
      response = numbers
        ? {
            case: "allExtensionNumbersResponse",
            value: create(v1.ExtensionNumberResponseSchema, { baseTypeName: query.value, extensionNumber: numbers }),
          }
        : error(Code.NotFound, `Type not found: ${query.value}`);
      break;
    }
    default:
      response = error(Code.InvalidArgument, "The request names no reflection query");
  }
  return create(v1.ServerReflectionResponseSchema, { validHost: request.host, originalRequest: request, messageResponse: response });
}

function error(code: Code, message: string): Response {
  return { case: "errorResponse", value: create(v1.ErrorResponseSchema, { errorCode: code, errorMessage: message }) };
}
