// Store semantics (MemoryStore and TCP store behave the same), blocking
// wait/get, timeouts naming the missing keys, and secret authentication.
#include "comm/store/store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "comm/store/net.h"
#include "comm/store/tcp_store.h"

namespace zerotrain::comm {
namespace {

using std::chrono::milliseconds;

// Runs each semantic test against both implementations.
class StoreTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (!GetParam()) {
      store_ = std::make_unique<MemoryStore>();
      return;
    }
    auto server = TcpStoreServer::start({"127.0.0.1", 0, "s3cret"});
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    server_ = std::move(server).value();
    store_ = connect_client();
  }
  std::unique_ptr<Store> connect_client() {
    if (!GetParam()) return nullptr;
    TcpStoreClientOptions o;
    o.port = server_->port();
    o.secret = "s3cret";
    auto client = TcpStoreClient::connect(o);
    EXPECT_TRUE(client.ok()) << client.status().to_string();
    return client.ok() ? std::move(client).value() : nullptr;
  }
  std::unique_ptr<TcpStoreServer> server_;
  std::unique_ptr<Store> store_;
};

TEST_P(StoreTest, SetThenGetReturnsBinaryValue) {
  std::string value("a\0b\xff", 4);
  ASSERT_TRUE(store_->set("k", value).ok());
  auto got = store_->get("k", milliseconds(100));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, value);
  ASSERT_TRUE(store_->set("k", "second").ok());
  EXPECT_EQ(*store_->get("k", milliseconds(100)), "second");
}

TEST_P(StoreTest, AddCountsAtomicallyAndRejectsNonIntegers) {
  EXPECT_EQ(*store_->add("n", 5), 5);
  EXPECT_EQ(*store_->add("n", -2), 3);
  EXPECT_EQ(*store_->get("n", milliseconds(100)), "3");
  ASSERT_TRUE(store_->set("text", "abc").ok());
  auto bad = store_->add("text", 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'text'"), std::string::npos);
}

TEST_P(StoreTest, ConcurrentAddsFromManyClientsSumExactly) {
  std::vector<std::unique_ptr<Store>> clients;
  std::vector<Store*> users;
  for (int i = 0; i < 4; ++i) {
    if (GetParam()) clients.push_back(connect_client());
    users.push_back(GetParam() ? clients.back().get() : store_.get());
  }
  std::vector<std::thread> threads;
  for (Store* s : users)
    threads.emplace_back([s] {
      for (int i = 0; i < 50; ++i) ASSERT_TRUE(s->add("c", 1).ok());
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(*store_->add("c", 0), 200);
}

TEST_P(StoreTest, WaitBlocksUntilAllKeysAppear) {
  std::unique_ptr<Store> other = GetParam() ? connect_client() : nullptr;
  Store* writer = other ? other.get() : store_.get();
  std::thread t([writer] {
    std::this_thread::sleep_for(milliseconds(50));
    ASSERT_TRUE(writer->set("a", "1").ok());
    std::this_thread::sleep_for(milliseconds(50));
    ASSERT_TRUE(writer->set("b", "2").ok());
  });
  auto start = std::chrono::steady_clock::now();
  Status st = store_->wait({"a", "b"}, milliseconds(5000));
  auto took = std::chrono::steady_clock::now() - start;
  t.join();
  EXPECT_TRUE(st.ok()) << st.to_string();
  EXPECT_GE(took, milliseconds(90));
}

TEST_P(StoreTest, GetBlocksUntilKeyIsSet) {
  std::unique_ptr<Store> other = GetParam() ? connect_client() : nullptr;
  Store* writer = other ? other.get() : store_.get();
  std::thread t([writer] {
    std::this_thread::sleep_for(milliseconds(50));
    ASSERT_TRUE(writer->set("late", "here").ok());
  });
  auto got = store_->get("late", milliseconds(5000));
  t.join();
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(*got, "here");
}

TEST_P(StoreTest, WaitTimeoutNamesOnlyTheMissingKeys) {
  ASSERT_TRUE(store_->set("present", "1").ok());
  auto start = std::chrono::steady_clock::now();
  Status st = store_->wait({"present", "absent1", "absent2"}, milliseconds(200));
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(st.code(), StatusCode::kTimeout);
  EXPECT_NE(st.message().find("missing keys: absent1, absent2"), std::string::npos) << st.message();
  EXPECT_EQ(st.message().find("present"), std::string::npos);
  EXPECT_GE(took, milliseconds(190));
  EXPECT_LT(took, milliseconds(2000));
  // The connection stays usable after a timed-out wait.
  EXPECT_EQ(*store_->get("present", milliseconds(100)), "1");
  auto get = store_->get("absent1", milliseconds(50));
  EXPECT_EQ(get.status().code(), StatusCode::kTimeout);
}

TEST_P(StoreTest, MissingKeysAndErase) {
  ASSERT_TRUE(store_->set("x", "1").ok());
  auto missing = store_->missing_keys({"x", "y"});
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(*missing, std::vector<std::string>{"y"});
  EXPECT_TRUE(*store_->erase("x"));
  EXPECT_FALSE(*store_->erase("x"));
  EXPECT_EQ(store_->missing_keys({"x"})->size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(MemoryAndTcp, StoreTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Tcp" : "Memory"; });

TEST(TcpStoreAuth, WrongSecretIsRefusedWithPermissionDenied) {
  auto server = TcpStoreServer::start({"127.0.0.1", 0, "right"});
  ASSERT_TRUE(server.ok());
  TcpStoreClientOptions o;
  o.port = (*server)->port();
  o.secret = "wrong";
  auto client = TcpStoreClient::connect(o);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), StatusCode::kPermissionDenied);
  std::string expected =
      "store at 127.0.0.1:" + std::to_string(o.port) + " refused this process: wrong job secret";
  EXPECT_NE(client.status().message().find(expected), std::string::npos)
      << client.status().message();
  EXPECT_EQ((*server)->refused_clients(), 1);
  // A client with the right secret is still served.
  o.secret = "right";
  auto good = TcpStoreClient::connect(o);
  ASSERT_TRUE(good.ok()) << good.status().to_string();
  EXPECT_TRUE((*good)->set("k", "v").ok());
  o.secret = "";  // an empty secret is also wrong
  EXPECT_EQ(TcpStoreClient::connect(o).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ((*server)->refused_clients(), 2);
}

TEST(TcpStoreConnect, RetriesUntilTheServerStarts) {
  // Reserve a free port, release it, then start the server there later.
  int port = 0;
  {
    auto probe = TcpStoreServer::start({"127.0.0.1", 0, "s"});
    port = (*probe)->port();
  }
  std::unique_ptr<TcpStoreServer> server;
  std::thread starter([&] {
    std::this_thread::sleep_for(milliseconds(300));
    server = std::move(TcpStoreServer::start({"127.0.0.1", port, "s"})).value();
  });
  TcpStoreClientOptions o;
  o.port = port;
  o.secret = "s";
  o.connect_timeout = milliseconds(5000);
  auto client = TcpStoreClient::connect(o);
  starter.join();
  ASSERT_TRUE(client.ok()) << client.status().to_string();
  EXPECT_TRUE((*client)->set("k", "v").ok());
}

TEST(TcpStoreConnect, GivesUpAtTheDeadlineNamingTheAddress) {
  int port = 0;
  {
    auto probe = TcpStoreServer::start({"127.0.0.1", 0, "s"});
    port = (*probe)->port();
  }
  TcpStoreClientOptions o;
  o.port = port;
  o.connect_timeout = milliseconds(300);
  auto start = std::chrono::steady_clock::now();
  auto client = TcpStoreClient::connect(o);
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(client.status().message().find("127.0.0.1:" + std::to_string(port)), std::string::npos);
  EXPECT_LT(took, milliseconds(2000));
}

TEST(TcpStoreServer, StoppedServerMakesClientCallsFailNotHang) {
  auto server = TcpStoreServer::start({"127.0.0.1", 0, "s"});
  TcpStoreClientOptions o;
  o.port = (*server)->port();
  o.secret = "s";
  o.io_timeout = milliseconds(2000);
  auto client = std::move(TcpStoreClient::connect(o)).value();
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(100));
    (*server)->stop();
  });
  Status st = client->wait({"never"}, milliseconds(10000));
  stopper.join();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.to_string();
  EXPECT_NE(st.message().find("closed the connection"), std::string::npos);
}

TEST(ConstantTimeEqual, ComparesContentAndLength) {
  EXPECT_TRUE(net::constant_time_equal("abc", "abc"));
  EXPECT_FALSE(net::constant_time_equal("abd", "abc"));
  EXPECT_FALSE(net::constant_time_equal("ab", "abc"));
  EXPECT_FALSE(net::constant_time_equal("abcd", "abc"));
  EXPECT_TRUE(net::constant_time_equal("", ""));
}

}  // namespace
}  // namespace zerotrain::comm
