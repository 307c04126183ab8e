import { toBinary, type DescEnum, type DescExtension, type DescFile, type DescMessage, type DescService } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";

/**
 * The proto files behind a set of services, with everything they import, looked up the ways
 * server reflection asks: by file name, by any fully-qualified symbol declared in a file, and
 * by extension.
 */
export class DescriptorIndex {
  /** By file name, as in "warden/projects/v1/projects.proto". */
  private readonly files = new Map<string, DescFile>();
  /** Every symbol without its leading dot: types, fields, oneofs, enum values, services, methods. */
  private readonly symbols = new Map<string, DescFile>();
  private readonly messages = new Set<string>();
  private readonly extensions: DescExtension[] = [];

  constructor(services: readonly DescService[]) {
    for (const service of services) this.addFile(service.file);
  }

  fileByName(name: string): DescFile | undefined {
    return this.files.get(name);
  }

  fileContainingSymbol(symbol: string): DescFile | undefined {
    return this.symbols.get(trimDot(symbol));
  }

  fileContainingExtension(extendee: string, fieldNumber: number): DescFile | undefined {
    return this.extensionsOf(extendee).find((ext) => ext.number === fieldNumber)?.file;
  }

  /** The numbers of the known extensions of a message; undefined when the message is unknown. */
  extensionNumbersOf(extendee: string): number[] | undefined {
    if (!this.messages.has(trimDot(extendee))) return undefined;
    return this.extensionsOf(extendee).map((ext) => ext.number);
  }

  /**
   * The serialized FileDescriptorProto of `file`, then those of everything it imports,
   * transitively. Files named in `sent` are left out (the client has them from earlier in the
   * stream, which the protocol allows), except `file` itself, which was asked for.
   */
  serialize(file: DescFile, sent: Set<string>): Uint8Array[] {
    const out: Uint8Array[] = [];
    const queue = [file];
    const seen = new Set<string>();
    for (let next = queue.shift(); next; next = queue.shift()) {
      const name = next.proto.name;
      if (seen.has(name)) continue;
      seen.add(name);
      if (next === file || !sent.has(name)) {
        out.push(toBinary(FileDescriptorProtoSchema, next.proto));
        sent.add(name);
      }
      queue.push(...next.dependencies);
    }
    return out;
  }

  private extensionsOf(extendee: string): DescExtension[] {
    const typeName = trimDot(extendee);
    return this.extensions.filter((ext) => ext.extendee.typeName === typeName);
  }

  private addFile(file: DescFile): void {
    if (this.files.has(file.proto.name)) return;
    this.files.set(file.proto.name, file);
    const pkg = file.proto.package;
    for (const message of file.messages) this.addMessage(file, message);
    for (const enumType of file.enums) this.addEnum(file, enumType, pkg);
    for (const ext of file.extensions) this.addExtension(file, ext);
    for (const service of file.services) {
      this.symbols.set(service.typeName, file);
      for (const method of service.methods) this.symbols.set(`${service.typeName}.${method.name}`, file);
    }
    for (const dependency of file.dependencies) this.addFile(dependency);
  }

  private addMessage(file: DescFile, message: DescMessage): void {
    this.symbols.set(message.typeName, file);
    this.messages.add(message.typeName);
    for (const field of message.fields) this.symbols.set(`${message.typeName}.${field.name}`, file);
    for (const oneof of message.oneofs) this.symbols.set(`${message.typeName}.${oneof.name}`, file);
    for (const nested of message.nestedMessages) this.addMessage(file, nested);
    for (const enumType of message.nestedEnums) this.addEnum(file, enumType, message.typeName);
    for (const ext of message.nestedExtensions) this.addExtension(file, ext);
  }

  /** Enum values are scoped like C++ enumerators: siblings of their enum, not children. */
  private addEnum(file: DescFile, enumType: DescEnum, scope: string): void {
    this.symbols.set(enumType.typeName, file);
    for (const value of enumType.values) this.symbols.set(scope ? `${scope}.${value.name}` : value.name, file);
  }

  private addExtension(file: DescFile, ext: DescExtension): void {
    this.symbols.set(ext.typeName, file);
    this.extensions.push(ext);
  }
}

function trimDot(name: string): string {
  return name.startsWith(".") ? name.slice(1) : name;
}
