// Prints the signature vectors internal/payment tests check against
// (internal/payment/testdata/viem_vectors.json): viem's personal_sign and
// EIP-712 TransferWithAuthorization outputs for a well-known test key.
import { privateKeyToAccount } from "viem/accounts";
import { hashMessage, hashTypedData, keccak256, toBytes } from "viem";

const pk = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"; // anvil/hardhat account 0
const account = privateKeyToAccount(pk);
const message = "skiff test wants you to sign in with your wallet:\n" + account.address + "\n\nNonce: 0123456789abcdef";
const domain = { name: "USD Coin", version: "2", chainId: 8453, verifyingContract: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" };
const types = { TransferWithAuthorization: [
  { name: "from", type: "address" }, { name: "to", type: "address" }, { name: "value", type: "uint256" },
  { name: "validAfter", type: "uint256" }, { name: "validBefore", type: "uint256" }, { name: "nonce", type: "bytes32" } ] };
const msg = { from: account.address, to: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8", value: 1500000n, validAfter: 0n,
  validBefore: 1795315256n, nonce: keccak256(toBytes("qt_example" + "api.example")) };
const out = {
  address: account.address,
  personal: { message, hash: hashMessage(message), signature: await account.signMessage({ message }) },
  typed: { domain, message: Object.fromEntries(Object.entries(msg).map(([k, v]) => [k, v.toString()])),
    hash: hashTypedData({ domain, types, primaryType: "TransferWithAuthorization", message: msg }),
    signature: await account.signTypedData({ domain, types, primaryType: "TransferWithAuthorization", message: msg }) },
  challengeHash: { id: "qt_example", realm: "api.example", hash: keccak256(toBytes("qt_example" + "api.example")) },
};
console.log(JSON.stringify(out, null, 1));
